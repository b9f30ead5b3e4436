/* wsaccept.c - the WebSocket handshake's key check and accept value (see term.h), apart from
 * term.c so that only programs that answer or check a handshake link nettle. */
#include <string.h>

#include <nettle/base64.h>
#include <nettle/sha1.h>

#include "libutil/term.h"

/* RFC 6455, section 1.3: the GUID appended to the key before hashing. */
static const char ws_guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

bool tsl_ws_key_valid(const char *key)
{
    if (!key || strlen(key) != 24 || strcmp(key + 22, "==") != 0)
        return false;
    struct base64_decode_ctx ctx;
    uint8_t raw[BASE64_DECODE_LENGTH(24)];
    size_t n = sizeof raw;
    base64_decode_init(&ctx);
    if (!base64_decode_update(&ctx, &n, raw, 24, key) || !base64_decode_final(&ctx))
        return false;
    return n == 16;
}

void tsl_ws_accept(const char *key, char out[29])
{
    struct sha1_ctx ctx;
    uint8_t digest[SHA1_DIGEST_SIZE];
    sha1_init(&ctx);
    sha1_update(&ctx, strlen(key), (const uint8_t *)key);
    sha1_update(&ctx, sizeof ws_guid - 1, (const uint8_t *)ws_guid);
    sha1_digest(&ctx, sizeof digest, digest);
    base64_encode_raw(out, sizeof digest, digest);
    out[BASE64_ENCODE_RAW_LENGTH(SHA1_DIGEST_SIZE)] = '\0';
}
