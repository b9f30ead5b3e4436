/* term.h - the messages of a job's terminal (docs/terminal.md), shared by tessel-shim (which
 * holds the job's PTY), tesseld (which relays them between a WebSocket and the shim) and the
 * CLI; and the two pure helpers around them: the WebSocket handshake's accept value (RFC 6455
 * section 4.2.2) and the detach key sequence (Ctrl-P Ctrl-Q, as docker attach).
 *
 * A message is one type byte and a payload; it travels as one WebSocket binary message between
 * a client and tesseld, and as one SOCK_SEQPACKET datagram between tesseld and the shim, so
 * that neither needs a frame parser of its own (wslay frames the WebSocket):
 *
 *   'i' INPUT   client -> job   bytes typed (1..TSL_TERM_INPUT_MAX)
 *   'r' RESIZE  client -> job   rows, cols: two big-endian 16-bit numbers
 *   'o' OUTPUT  job -> client   bytes the job wrote to its terminal
 *   'n' NOTICE  job -> client   one line for the person (output not shown, attached elsewhere)
 *   'x' EXIT    job -> client   the job's end as the shim records it: "exit N" or "signal N"
 *
 * and, first on each connection from tesseld to the shim, what it is for:
 *
 *   'a' ATTACH  tesseld -> shim the job's terminal (no payload)
 *   'e' EXEC    tesseld -> shim a new process in the job on a terminal of its own: its argv,
 *                               each argument NUL-terminated (EXIT is then that process's end)
 */
#ifndef TESSEL_UTIL_TERM_H
#define TESSEL_UTIL_TERM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TSL_TERM_INPUT  'i'
#define TSL_TERM_RESIZE 'r'
#define TSL_TERM_OUTPUT 'o'
#define TSL_TERM_NOTICE 'n'
#define TSL_TERM_EXIT   'x'
#define TSL_TERM_ATTACH 'a'
#define TSL_TERM_EXEC   'e'

/* Most bytes of one INPUT message: a paste is cut into pieces of this size by the client; the
 * PTY's input queue holds 4 KiB, so a larger message would only wait in the shim. */
#define TSL_TERM_INPUT_MAX 4096
/* Most bytes of one OUTPUT message (the shim reads the PTY this much at a time). */
#define TSL_TERM_OUTPUT_MAX 16384
/* Most arguments of an EXEC. */
#define TSL_TERM_EXEC_ARGS 256
/* Most bytes of a NOTICE or EXIT text. */
#define TSL_TERM_TEXT_MAX 256
/* Largest message either way, type byte included. */
#define TSL_TERM_MSG_MAX (1 + TSL_TERM_OUTPUT_MAX)
/* Bounds of a window size: a RESIZE outside 1..TSL_TERM_DIM_MAX is clamped.  Programs size
 * buffers by rows x cols (a full-screen editor, a pager); 1000 x 1000 is far above any screen
 * (a 8K display with a 6-pixel font is ~1300 columns wide: clamped to 1000, still usable). */
#define TSL_TERM_DIM_MAX 1000

typedef struct {
    char type;           /* one of the TSL_TERM_* letters */
    const uint8_t *data; /* INPUT, OUTPUT, NOTICE, EXIT: the payload (points into the message) */
    size_t len;
    unsigned rows, cols; /* RESIZE, clamped to 1..TSL_TERM_DIM_MAX */
} tsl_term_msg_t;

/* Parse one message of len bytes.  0 and *out filled, or -1 with errno EINVAL: empty, unknown
 * type, a payload too long for its type (INPUT, NOTICE, EXIT, OUTPUT), an empty INPUT, or a
 * RESIZE that is not exactly 4 bytes of payload.  out->data points into msg. */
int tsl_term_parse(const void *msg, size_t len, tsl_term_msg_t *out);

/* The arguments of an EXEC message into argv (room for TSL_TERM_EXEC_ARGS + 1: the last is
 * NULL), pointing into buf, a copy of the payload (room for m->len bytes).  The count, or -1
 * with errno EINVAL (not an EXEC, no argument, an empty first one, too many, or not ending with
 * a NUL). */
int tsl_term_exec_argv(const tsl_term_msg_t *m, char *buf, char **argv);

/* A RESIZE message into out (5 bytes), rows and cols clamped.  Returns 5. */
size_t tsl_term_resize_msg(uint8_t out[5], unsigned rows, unsigned cols);

/* Clamp one dimension to 1..TSL_TERM_DIM_MAX (0 becomes 1). */
unsigned tsl_term_clamp(unsigned v);

/* Whether key (a Sec-WebSocket-Key header's value) is what RFC 6455 asks: the base64 of 16
 * bytes (24 characters, ending "=="). */
bool tsl_ws_key_valid(const char *key);
/* The Sec-WebSocket-Accept value for key: base64(SHA-1(key + the RFC's GUID)), 28 characters
 * and a NUL into out.  Needs -lnettle. */
void tsl_ws_accept(const char *key, char out[29]);

/* The detach key sequence Ctrl-P Ctrl-Q, recognised in what a person types (a state across
 * reads: the two keys may come in two reads). */
#define TSL_TERM_DETACH_1 0x10 /* Ctrl-P */
#define TSL_TERM_DETACH_2 0x11 /* Ctrl-Q */
typedef struct {
    bool pending; /* a Ctrl-P was held back, waiting for the next key */
} tsl_term_detach_t;

/* Filter n bytes typed: what to send to the job goes into out (room for n + 1 bytes: a Ctrl-P
 * held back from the previous read comes first when the next key is not Ctrl-Q), *outlen
 * set.  Returns true when the sequence was typed (out then holds what came before it; what
 * follows it is dropped). */
bool tsl_term_detach_feed(tsl_term_detach_t *d, const uint8_t *in, size_t n, uint8_t *out,
                          size_t *outlen);

#endif
