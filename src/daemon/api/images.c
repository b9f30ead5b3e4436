/* images.c - GET /v1/images: the images a job may name (the image store, container.h). */
#include "daemon/api/api.h"
#include "daemon/container_launch.h"

void api_images_list(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    tessd_t *d = ctx;
    tessd_caller_t who;
    if (!api_enter(d, req, rep, &who))
        return;
    /* The store is a few directories: read under the lock like the GPUs (no store work). */
    json_t *arr = json_array();
    tessd_images_json(d, arr);
    thttp_json(rep, 200, json_pack("{s:o}", "images", arr));
    api_leave(d);
}
