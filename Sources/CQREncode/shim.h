// libqrencode (Debian: libqrencode-dev): encodes the contact card's QR code.
#include <qrencode.h>
