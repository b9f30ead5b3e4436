/* upgrade.h - libclient's internal entry for term.c: a request that switches protocols on a
 * connection of its own, with the client's token (client.c). */
#ifndef TESSEL_LIBCLIENT_UPGRADE_H
#define TESSEL_LIBCLIENT_UPGRADE_H

#include <stddef.h>

#include "tessel/client.h"

/* GET path with the extra header lines `headers` ("Name: value\r\n"...) and c's token; a 101
 * must carry the header Sec-WebSocket-Accept with the value accept (EPROTO otherwise).  0 with
 * *fd (non-blocking, close-on-exec) and the bytes after the answer in extra (*extra_len <= cap)
 * on a 101; otherwise -1 with errno and err: tesseld's refusal (errno from its status as
 * tclient_request, tclient_status and tclient_error_code set), a transfer failure, or ENOTSUP
 * when c goes through libcurl (an HTTP proxy is set: libcurl 7.88 has no WebSocket). */
int tclient_upgrade(tclient_t *c, const char *path, const char *headers, const char *accept,
                    int *fd, char *extra, size_t cap, size_t *extra_len, tsl_error_t *err);

#endif
