/* images.c - `tessel images`: the container images a job may name with `tessel run --image`,
 * from tesseld's image store (GET /v1/images, docs/containers.md). */
#include <stdio.h>
#include <time.h>

#include "cmd/tessel/cli.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: tessel images [--json]\n"
               "List the container images of this machine's image store, as `tessel run\n"
               "--image NAME[:TAG]` names them.  An admin adds them (docs/containers.md).\n"
               "\n"
               "  --json           print the API's JSON ({\"images\": [...]})\n");
}

int cmd_images(cli_t *cli, int argc, char **argv)
{
    int rc = cli_json_only_args(cli, argc, argv, usage);
    if (rc >= 0)
        return rc;
    json_t *ans = cli_get(cli, "/v1/images", &rc);
    if (!ans)
        return rc;
    static const char *const hdr[] = {"IMAGE", "NAME", "TAG", "CREATED"};
    cli_table_t *t = cli_table_new(4, hdr);
    size_t i;
    json_t *img;
    json_array_foreach(json_object_get(ans, "images"), i, img)
    {
        char created[32] = "";
        json_t *c = json_object_get(img, "created_at");
        if (json_is_integer(c)) {
            time_t at = (time_t)json_integer_value(c);
            struct tm tm;
            if (localtime_r(&at, &tm))
                strftime(created, sizeof created, "%Y-%m-%d %H:%M", &tm);
        }
        const char *row[] = {json_string_value(json_object_get(img, "image")),
                             json_string_value(json_object_get(img, "name")),
                             json_string_value(json_object_get(img, "tag")),
                             created[0] ? created : NULL};
        cli_table_add(t, row);
    }
    cli_table_print(t, stdout);
    json_decref(ans);
    return CLI_OK;
}
