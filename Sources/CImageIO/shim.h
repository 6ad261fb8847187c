// Reading photos of QR codes (PNG with libpng, JPEG with libjpeg) as 8-bit grey, the
// format zbar scans, and writing a QR code as a PNG. Debian: libpng-dev, libjpeg-dev.
//
// libjpeg reports errors by calling error_exit, which by default ends the process; these
// wrappers longjmp back instead and return the message, which Swift cannot do itself.
// libpng's "simplified" API (png_image) needs no setjmp and is used as it is.
#ifndef YAOK_CIMAGEIO_SHIM_H
#define YAOK_CIMAGEIO_SHIM_H

#include <setjmp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <png.h>
#include <jpeglib.h>

enum {
    YAOK_IMAGE_OK = 0,
    YAOK_IMAGE_CANNOT_OPEN = 1,   // errno says why
    YAOK_IMAGE_UNKNOWN_FORMAT = 2,
    YAOK_IMAGE_DECODE_FAILED = 3, // message says why
    YAOK_IMAGE_TOO_LARGE = 4,
};

// Photos larger than this (in pixels) are refused rather than allocated: 40 megapixels
// (a phone's full-size photo; a crafted image must not make the CLI take gigabytes).
static const unsigned long YAOK_IMAGE_MAX_PIXELS = 40000000UL;

static inline void yaok_image_set_message(char *message, size_t size, const char *text) {
    if (size == 0) return;
    strncpy(message, text, size - 1);
    message[size - 1] = 0;
}

static inline int yaok_png_read_gray(const char *path, unsigned char **pixels, unsigned *width,
                                     unsigned *height, char *message, size_t message_size) {
    png_image image;
    memset(&image, 0, sizeof image);
    image.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_file(&image, path)) {
        yaok_image_set_message(message, message_size, image.message);
        png_image_free(&image);
        return YAOK_IMAGE_DECODE_FAILED;
    }
    if ((unsigned long)image.width * image.height > YAOK_IMAGE_MAX_PIXELS) {
        png_image_free(&image);
        return YAOK_IMAGE_TOO_LARGE;
    }
    image.format = PNG_FORMAT_GRAY;
    unsigned char *buffer = malloc(PNG_IMAGE_SIZE(image));
    if (buffer == NULL) {
        png_image_free(&image);
        yaok_image_set_message(message, message_size, "out of memory");
        return YAOK_IMAGE_DECODE_FAILED;
    }
    // Transparent parts are laid over white, as a viewer would show them.
    png_color white = {255, 255, 255};
    if (!png_image_finish_read(&image, &white, buffer, 0, NULL)) {
        yaok_image_set_message(message, message_size, image.message);
        free(buffer);
        png_image_free(&image);
        return YAOK_IMAGE_DECODE_FAILED;
    }
    *pixels = buffer;
    *width = image.width;
    *height = image.height;
    return YAOK_IMAGE_OK;
}

struct yaok_jpeg_error {
    struct jpeg_error_mgr manager;
    jmp_buf jump;
    char message[JMSG_LENGTH_MAX];
};

static inline void yaok_jpeg_error_exit(j_common_ptr info) {
    struct yaok_jpeg_error *error = (struct yaok_jpeg_error *)info->err;
    (*info->err->format_message)(info, error->message);
    longjmp(error->jump, 1);
}

// Warnings (a truncated file, extraneous bytes) are not printed: the decoder goes on, and a
// photo that still holds no readable QR code is reported as such.
static inline void yaok_jpeg_emit_message(j_common_ptr info, int level) {
    (void)info;
    (void)level;
}

static inline int yaok_jpeg_read_gray(const char *path, unsigned char **pixels, unsigned *width,
                                      unsigned *height, char *message, size_t message_size) {
    FILE *file = fopen(path, "rb");
    if (file == NULL) return YAOK_IMAGE_CANNOT_OPEN;
    struct jpeg_decompress_struct info;
    struct yaok_jpeg_error error;
    unsigned char *volatile buffer = NULL;
    info.err = jpeg_std_error(&error.manager);
    error.manager.error_exit = yaok_jpeg_error_exit;
    error.manager.emit_message = yaok_jpeg_emit_message;
    if (setjmp(error.jump)) {
        yaok_image_set_message(message, message_size, error.message);
        jpeg_destroy_decompress(&info);
        fclose(file);
        free(buffer);
        return YAOK_IMAGE_DECODE_FAILED;
    }
    jpeg_create_decompress(&info);
    jpeg_stdio_src(&info, file);
    jpeg_read_header(&info, TRUE);
    if ((unsigned long)info.image_width * info.image_height > YAOK_IMAGE_MAX_PIXELS) {
        jpeg_destroy_decompress(&info);
        fclose(file);
        return YAOK_IMAGE_TOO_LARGE;
    }
    info.out_color_space = JCS_GRAYSCALE;
    jpeg_start_decompress(&info);
    size_t stride = info.output_width * (size_t)info.output_components;
    buffer = malloc(stride * info.output_height);
    if (buffer == NULL) {
        jpeg_destroy_decompress(&info);
        fclose(file);
        yaok_image_set_message(message, message_size, "out of memory");
        return YAOK_IMAGE_DECODE_FAILED;
    }
    while (info.output_scanline < info.output_height) {
        JSAMPROW row = buffer + stride * info.output_scanline;
        jpeg_read_scanlines(&info, &row, 1);
    }
    jpeg_finish_decompress(&info);
    *pixels = buffer;
    *width = info.output_width;
    *height = info.output_height;
    jpeg_destroy_decompress(&info);
    fclose(file);
    return YAOK_IMAGE_OK;
}

// Reads a PNG or a JPEG (recognised by its first bytes, not its name) as 8-bit grey, one
// byte a pixel, rows top to bottom; *pixels is the caller's to free().
static inline int yaok_image_read_gray(const char *path, unsigned char **pixels, unsigned *width,
                                       unsigned *height, char *message, size_t message_size) {
    unsigned char magic[8] = {0};
    FILE *file = fopen(path, "rb");
    if (file == NULL) return YAOK_IMAGE_CANNOT_OPEN;
    size_t got = fread(magic, 1, sizeof magic, file);
    fclose(file);
    static const unsigned char png[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    if (got == 8 && memcmp(magic, png, 8) == 0)
        return yaok_png_read_gray(path, pixels, width, height, message, message_size);
    if (got >= 3 && magic[0] == 0xFF && magic[1] == 0xD8 && magic[2] == 0xFF)
        return yaok_jpeg_read_gray(path, pixels, width, height, message, message_size);
    return YAOK_IMAGE_UNKNOWN_FORMAT;
}

// Writes 8-bit grey pixels (rows top to bottom, `width` bytes each) as a PNG file.
static inline int yaok_png_write_gray(const char *path, const unsigned char *pixels, unsigned width,
                                      unsigned height, char *message, size_t message_size) {
    png_image image;
    memset(&image, 0, sizeof image);
    image.version = PNG_IMAGE_VERSION;
    image.width = width;
    image.height = height;
    image.format = PNG_FORMAT_GRAY;
    if (!png_image_write_to_file(&image, path, 0, pixels, (png_int_32)width, NULL)) {
        yaok_image_set_message(message, message_size, image.message);
        png_image_free(&image);
        return YAOK_IMAGE_DECODE_FAILED;
    }
    return YAOK_IMAGE_OK;
}

#endif
