/* logcap.h - a job's log with a size limit: its head and its tail, and a marker where the
 * middle was dropped (used by tessel-shim for the job's stdout and stderr).
 *
 * Of a stream longer than the limit L the log keeps the first L - T bytes (the head, written
 * as they come) and the last T bytes (the tail, held in memory and written when the stream
 * ends), where T = min(L / 2, tail_max); between them one line
 *
 *   [tessel: 1234567 bytes dropped here: log limit 64 MiB]
 *
 * So the file never holds more than L bytes of output plus that line (and a newline before it
 * when the head does not end with one).  While the head is full, what the stream writes
 * reaches the file only at its end (a follower of the log sees nothing new meanwhile); a
 * supervisor killed by SIGKILL loses the tail.  Bytes the file already held (an earlier
 * attempt of a requeued job) count towards the head.
 *
 * Bytes a write fails to store (ENOSPC, EDQUOT, EIO ...) are counted, never retried: at the
 * next write that succeeds, one line marks the gap:
 *
 *   [tessel: 4096 bytes lost here: No space left on device]
 *
 * Time index (for `tessel logs --since`): with tagent_logcap_set_index, the writer appends
 * one line "SECONDS OFFSET\n" to a second file beside the log for each second (Unix time) in
 * which the stream wrote: OFFSET is where that second's first byte went in the log file.  The
 * tail kept past the limit reaches the file only at the end: it is indexed at that time.  A
 * reader finds where output since a time starts (tagent_logidx_since) without reading the
 * log; tagent_log_tail finds where its last N lines start.
 *
 * Single-threaded: one writer per stream, no locks. */
#ifndef TESSEL_AGENT_LOGCAP_H
#define TESSEL_AGENT_LOGCAP_H

#include <stddef.h>
#include <stdint.h>

/* Most bytes of a stream's tail held in memory (per stream: a job's two streams hold at most
 * 2 MiB in its shim, and only once its head is full): the last screens of a crash's output
 * and its traceback fit many times over. */
#define TAGENT_LOG_TAIL_MAX (1u << 20)

typedef struct tagent_logcap tagent_logcap_t;

/* A writer on fd (a regular file opened for append; the writer owns and closes it) keeping
 * limit bytes (0 = no limit) with a tail of at most tail_max bytes.  already: bytes the file
 * holds now.  NULL with errno ENOMEM (fd is then not closed). */
tagent_logcap_t *tagent_logcap_open(int fd, uint64_t limit, uint64_t already, size_t tail_max);

/* Take len bytes of the stream.  Never blocks but on the file's own write. */
void tagent_logcap_write(tagent_logcap_t *lc, const void *buf, size_t len);
/* The same, written at Unix time now (seconds): what tagent_logcap_write does with time(). */
void tagent_logcap_write_at(tagent_logcap_t *lc, const void *buf, size_t len, int64_t now);

/* Keep the time index in idx_fd (a regular file opened for append, owned and closed by the
 * writer from now on; its existing lines are an earlier attempt's and stay).  Index lines a
 * write fails to store are dropped: the index is a help to readers, never the output. */
void tagent_logcap_set_index(tagent_logcap_t *lc, int idx_fd);

/* Bytes dropped by the limit so far (the tail not yet written counts as kept). */
uint64_t tagent_logcap_dropped(const tagent_logcap_t *lc);

/* End of the stream: write the marker and the tail, close the file, free lc.  0, or -1 with
 * errno when a write or the close failed (lc is freed either way).  NULL is accepted. */
int tagent_logcap_close(tagent_logcap_t *lc);

/* Where output written at or after Unix time since (seconds) starts in a log whose time
 * index is open on idx_fd (read with pread: idx_fd's offset does not move): *off is the offset
 * of the first index entry at or after since; 1 when there is none (nothing written since:
 * start at the end); 0 when found; -1 with errno when reading failed.  Malformed lines are
 * skipped.  Bounded whatever the file holds (a job's user may make it a sparse file of
 * terabytes): a bisection over byte positions, at most 52 reads of 4 KiB and a last scan of
 * 12 KiB; exact for an index whose seconds never decrease (the shim's). */
int tagent_logidx_since(int idx_fd, int64_t since, uint64_t *off);

/* Where the last n lines (n >= 1) of the size bytes of the log open on fd start, reading at
 * most its last max bytes: *off is just after the n-th newline before the log's end (a
 * newline that ends the log does not count; a last line without one is a line).  0 when found,
 * or when the log holds n lines or fewer (*off 0); 1 when the last max bytes of a longer log
 * hold fewer than n lines (*off is size - max: the answer starts there); -1 with errno when a
 * read failed. */
int tagent_log_tail(int fd, uint64_t size, uint64_t n, uint64_t max, uint64_t *off);

#endif
