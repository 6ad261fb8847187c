// libzbar (Debian: libzbar-dev): finds and decodes the QR code in a photo of a contact card.
#include <zbar.h>

// zbar_fourcc is a function-like macro, which Swift cannot call: the Y800 format (8-bit
// grey, one byte a pixel), the only one zbar scans without converting.
static const unsigned long YAOK_ZBAR_Y800 = zbar_fourcc('Y', '8', '0', '0');
