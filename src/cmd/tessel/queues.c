/* queues.c - `tessel queues`: the queue tree with each queue's guarantee, limit and usage per
 * resource and who may submit to it; admins add, change and remove queues (/v1/queues). */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cmd/tessel/cli.h"
#include "libutil/duration.h"
#include "libutil/size.h"

/* Deepest queue tree tesseld accepts (TSCHED_MAX_QUEUE_DEPTH), with room for a bad answer. */
#define QUEUES_MAX_DEPTH 8

/* Longest --reserve-after tesseld accepts (TESSD_RESERVE_AFTER_MAX): a week. */
#define QUEUES_RESERVE_MAX (7 * 86400)

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: tessel queues [list] [--json]\n"
        "       tessel queues add NAME [--parent P] [--guarantee RES=V,...] [--limit RES=V,...]\n"
        "                              [--weight W] [--priority N] [--allow-users U,...]\n"
        "                              [--allow-groups G,...] [--allow-roles R,...]\n"
        "                              [--reserve-after D] [--placement P]\n"
        "                              [--idle-reclaim D] [--gpu-mem-oversubscribe S]\n"
        "                              (admin)\n"
        "       tessel queues set NAME [--guarantee ...] [--limit ...] [--weight W]\n"
        "                              [--priority N] [--allow-... LIST] [--open]\n"
        "                              [--reserve-after D] [--placement P]\n"
        "                              [--idle-reclaim D] [--gpu-mem-oversubscribe S]\n"
        "                              (admin)\n"
        "       tessel queues rm NAME   (admin)\n"
        "List the queue tree (children under their parent) with, per resource, what each\n"
        "queue uses, is guaranteed and is limited to; or manage queues.\n"
        "\n"
        "  --parent P           the parent queue (at creation only; jobs go to leaf queues)\n"
        "  --guarantee RES=V,.. what the queue is owed: RES is gpu, gpu-mem, cpu or mem;\n"
        "                       V an amount (gpu=1.5, cpu=8), a size (gpu-mem=40G, mem=64G)\n"
        "                       or none (not governed); --guarantee none: all four none\n"
        "  --limit RES=V,...    cap on what its running jobs hold together, same syntax\n"
        "                       (none: no cap); set changes only the resources named;\n"
        "                       also ngpu=V: normal GPU units, each GPU counting its\n"
        "                       model's relative speed (tessel gpu-models)\n"
        "  --weight W           share of idle capacity among sibling queues (1..1000)\n"
        "  --priority N         orders the list only (-1000..1000)\n"
        "  --max-gpu GPUS|none  old spelling of --limit gpu=GPUS\n"
        "  --allow-users U,...  who may submit: these users, or members of these Unix\n"
        "  --allow-groups G,... groups, or users of these roles (admin, user); 'none' empties\n"
        "  --allow-roles R,...  a list; set changes only the lists named.  A queue with no\n"
        "                       list is open to everyone (the default); so is one after\n"
        "  --open               (set) which removes all three lists.  A job must be\n"
        "                       admitted by its queue and every queue above it.\n"
        "  --reserve-after D    a big job of the queue that has waited D (0, 30s, 15m, 1h)\n"
        "                       gets a reservation: smaller jobs stop passing it\n"
        "  --placement P        spread: fractional jobs on idle GPUs first; pack: share\n"
        "                       GPUs to keep whole ones free.  Both take 'inherit' (the\n"
        "                       parent's, or tesseld's for a top-level queue)\n"
        "  --idle-reclaim D     a running job of the queue that did no GPU work for D\n"
        "                       (30m, 1h) gives its GPU memory back, resumed at its next\n"
        "                       CUDA call; off: never; inherit: its parent's (the\n"
        "                       default; a top-level queue: never).  IDLE shows the time\n"
        "                       in effect, 'time(queue)' when inherited from that queue;\n"
        "                       a queue's time is the most its jobs may ask (admins: any)\n"
        "  --gpu-mem-oversubscribe S  host memory per GPU (8G) a job of the queue may\n"
        "                       spill past its GPU memory when it does not say, and the\n"
        "                       most a job may ask (admins: any); 0: none (no default, no\n"
        "                       most); inherit: its parent's (the default; a top-level\n"
        "                       queue: none).  OVERSUB shows it as IDLE does\n"
        "  --json               print the API's JSON\n"
        "\n"
        "Each resource column reads USED/GUARANTEE/LIMIT ('-': not governed, no cap);\n"
        "NGPU is in normal GPU units and has no guarantee (always '-').\n"
        "ALLOWED says who may submit: 'all', or the lists (u: users, g: groups, r: roles).\n"
        "GUARANTEE says 'held' when no pending job is owed capacity, 'owed' while one\n"
        "waits for it (a preemption is then planned or under way), '-' before the first\n"
        "scheduling cycle.  RESERVE and PLACEMENT are the settings in effect, own or\n"
        "inherited (--json: own ones in reserve_after and placement, null = inherited).\n"
        "IDLE is the queue's idle time before a job's GPU memory is given back ('-': never).\n"
        "OVERSUB is the host memory per GPU its jobs may spill into ('-': none set).\n");
}

/* x rounded to the nearest integer, halves away from zero (as llround, which would make
 * `tessel` load libm for this alone: one shared object less to map at every start);
 * clamped to the range of int64_t. */
static int64_t round_i64(double x)
{
    if (x >= 9.2e18)
        return INT64_MAX;
    if (x <= -9.2e18)
        return INT64_MIN;
    int64_t i = (int64_t)x; /* toward zero; the remainder is exact */
    double rest = x - (double)i;
    return rest >= 0.5 ? i + 1 : rest <= -0.5 ? i - 1 : i;
}

/* A GPU or CPU amount of the API (a number, milli precision) as people write it. */
static void amount_cell(const json_t *v, char *buf, size_t len)
{
    if (!json_is_number(v)) {
        snprintf(buf, len, "-");
        return;
    }
    cli_format_milli(round_i64(json_number_value(v) * 1000.0), buf, len);
}

static void size_cell(const json_t *v, char *buf, size_t len)
{
    if (!json_is_integer(v))
        snprintf(buf, len, "-");
    else if (json_integer_value(v) == 0)
        snprintf(buf, len, "0");
    else
        tsl_format_size((uint64_t)json_integer_value(v), buf, len);
}

void cli_queue_res_cell(const json_t *q, const char *key, char *buf, size_t len)
{
    const char *sets[3] = {"usage", "guarantee", "limit"};
    char part[3][32];
    bool is_size = strcmp(key, "gpu_mem") == 0 || strcmp(key, "mem") == 0;
    for (int i = 0; i < 3; i++) {
        const json_t *v = json_object_get(json_object_get(q, sets[i]), key);
        if (is_size)
            size_cell(v, part[i], sizeof part[i]);
        else
            amount_cell(v, part[i], sizeof part[i]);
    }
    snprintf(buf, len, "%s/%s/%s", part[0], part[1], part[2]);
}

void cli_queue_use(const json_t *q, cli_queue_use_t *u)
{
    cli_queue_res_cell(q, "gpu", u->gpu, sizeof u->gpu);
    cli_queue_res_cell(q, "ngpu", u->ngpu, sizeof u->ngpu);
    cli_queue_res_cell(q, "gpu_mem", u->gpu_mem, sizeof u->gpu_mem);
    cli_queue_res_cell(q, "cpu", u->cpu, sizeof u->cpu);
    cli_queue_res_cell(q, "mem", u->mem, sizeof u->mem);
    snprintf(u->pending, sizeof u->pending, "%lld",
             (long long)json_integer_value(json_object_get(q, "pending")));
    snprintf(u->running, sizeof u->running, "%lld",
             (long long)json_integer_value(json_object_get(q, "running")));
}

/* "all", or "u:alice,bob g:ml r:admin" (the lists that are not empty). */
static void allow_cell(const json_t *allow, char *buf, size_t len)
{
    static const char *const kinds[] = {"users", "groups", "roles"};
    size_t n = 0;
    buf[0] = '\0';
    for (int k = 0; k < 3; k++) {
        const json_t *arr = json_object_get(allow, kinds[k]);
        if (!json_array_size(arr))
            continue;
        n += (size_t)snprintf(buf + n, len - n, "%s%c:", n ? " " : "", kinds[k][0]);
        size_t i;
        const json_t *v;
        json_array_foreach(arr, i, v)
        {
            if (n >= len)
                break;
            n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? "," : "",
                                  json_is_string(v) ? json_string_value(v) : "?");
        }
        if (n >= len)
            break;
    }
    if (!buf[0])
        snprintf(buf, len, "all");
}

static void add_row(cli_table_t *t, const json_t *q, int depth)
{
    char name[128], weight[32];
    cli_queue_use_t u;
    snprintf(name, sizeof name, "%*s%s", 2 * depth, "",
             json_string_value(json_object_get(q, "name")));
    snprintf(weight, sizeof weight, "%lld",
             (long long)json_integer_value(json_object_get(q, "weight")));
    cli_queue_use(q, &u);
    const json_t *sat = json_object_get(q, "guarantee_satisfied");
    const char *held = json_is_true(sat) ? "held" : json_is_false(sat) ? "owed" : "-";
    char allowed[256];
    allow_cell(json_object_get(q, "allow"), allowed, sizeof allowed);
    const json_t *eff = json_object_get(q, "effective");
    const json_t *ra = json_object_get(eff, "reserve_after"),
                 *pl = json_object_get(eff, "placement");
    char reserve[32] = "-";
    if (json_is_number(ra))
        tsl_format_seconds(round_i64(json_number_value(ra)), reserve, sizeof reserve);
    const char *place = json_is_string(pl) ? json_string_value(pl) : "-";
    /* the time in effect, "off" when one on its path says never, "-" when none says; the
     * queue it comes from in brackets when it is not the queue's own */
    char idle[112], ist[32];
    const char *qname = json_string_value(json_object_get(q, "name"));
    json_int_t ir = json_integer_value(json_object_get(q, "idle_reclaim"));
    if (ir > 0)
        tsl_format_seconds(ir, ist, sizeof ist);
    else
        snprintf(ist, sizeof ist, "off");
    /* a tesseld from before migration 24 names no queue: its own time, or "-" */
    cli_format_inherited(ist, json_string_value(json_object_get(q, "idle_reclaim_from")), qname,
                         ir > 0 ? ist : "-", idle, sizeof idle);
    /* the same for the oversubscription: "none" when one on its path says none */
    char over[112], ost[32];
    json_int_t ov = json_integer_value(json_object_get(q, "gpu_mem_oversubscribe"));
    if (ov > 0)
        tsl_format_size((uint64_t)ov, ost, sizeof ost);
    else
        snprintf(ost, sizeof ost, "none");
    cli_format_inherited(ost, json_string_value(json_object_get(q, "gpu_mem_oversubscribe_from")),
                         qname, "-", over, sizeof over);
    const char *row[] = {name,      weight, u.gpu,   u.ngpu, u.gpu_mem, u.cpu, u.mem,  u.pending,
                         u.running, held,   reserve, place,  idle,      over,  allowed};
    cli_table_add(t, row);
}

/* Rows for the queues whose parent is parent (NULL: top level), in the API's order, each
 * followed by its subtree. */
static void add_subtree(cli_table_t *t, const json_t *queues, const char *parent, int depth)
{
    size_t i;
    json_t *q;
    json_array_foreach(queues, i, q)
    {
        const char *p = json_string_value(json_object_get(q, "parent"));
        if (parent ? !p || strcmp(p, parent) != 0 : p != NULL)
            continue;
        add_row(t, q, depth);
        if (depth < QUEUES_MAX_DEPTH)
            add_subtree(t, queues, json_string_value(json_object_get(q, "name")), depth + 1);
    }
}

/* tesseld --slurm: GET /v1/slurm/queues, NULL on one box (404) or when it cannot be read (a
 * warning then). */
static json_t *slurm_map(cli_t *cli)
{
    json_t *ans;
    tsl_error_t err;
    if (tclient_request(cli->client, "GET", "/v1/slurm/queues", NULL, &ans, &err) < 0) {
        if (tclient_status(cli->client) != 404)
            fprintf(stderr, "tessel: warning: the queues' Slurm partitions: %s\n", err.text);
        return NULL;
    }
    return ans;
}

/* The partitions side by side with the queues mapped onto them. */
static void print_slurm_map(const json_t *m)
{
    static const char *const hdr[] = {"QUEUE", "PARTITION", "QOS",    "NODES",
                                      ">CPUS", "GRES",      "STATES", "NOTE"};
    cli_table_t *t = cli_table_new(8, hdr);
    size_t i;
    json_t *q;
    json_array_foreach(json_object_get(m, "queues"), i, q)
    {
        const json_t *p = json_object_get(q, "slurm");
        const char *part = json_string_value(json_object_get(q, "partition"));
        char cpus[48] = "-";
        if (json_is_object(p))
            snprintf(cpus, sizeof cpus, "%lld/%lld",
                     (long long)json_integer_value(json_object_get(p, "alloc_cpus")),
                     (long long)json_integer_value(json_object_get(p, "cpus")));
        const char *note = !part ? "the cluster's default partition"
                           : json_is_false(json_object_get(q, "found"))
                               ? "no such partition: sbatch refuses"
                               : "";
        const char *row[] = {json_string_value(json_object_get(q, "queue")),
                             part ? part : "(default)",
                             json_string_value(json_object_get(q, "qos")) ?: "-",
                             json_string_value(json_object_get(p, "node_names")) ?: "-",
                             cpus,
                             json_string_value(json_object_get(p, "gres")) ?: "-",
                             json_string_value(json_object_get(p, "states")) ?: "-",
                             note};
        cli_table_add(t, row);
    }
    json_array_foreach(json_object_get(m, "unmapped_partitions"), i, q)
    {
        char cpus[48];
        snprintf(cpus, sizeof cpus, "%lld/%lld",
                 (long long)json_integer_value(json_object_get(q, "alloc_cpus")),
                 (long long)json_integer_value(json_object_get(q, "cpus")));
        const char *row[] = {"-",
                             json_string_value(json_object_get(q, "name")),
                             "-",
                             json_string_value(json_object_get(q, "node_names")),
                             cpus,
                             json_string_value(json_object_get(q, "gres")),
                             json_string_value(json_object_get(q, "states")),
                             "no Tessel queue goes here"};
        cli_table_add(t, row);
    }
    printf("\nSlurm (tesseld --slurm): Tessel's queues onto partitions (slurm-queues); CPUS "
           "allocated/total\n");
    cli_table_print(t, stdout);
    const char *why = json_string_value(json_object_get(m, "slurm_error"));
    if (why)
        printf("(Slurm could not be read: %s)\n", why);
}

static int list(cli_t *cli)
{
    int rc;
    if (cli->json) {
        /* The API's answer, with tesseld --slurm's mapping under "slurm". */
        json_t *ans;
        if (cli_connect(cli) < 0 || cli_call(cli, "GET", "/v1/queues", NULL, &ans) < 0)
            return CLI_ERR;
        json_t *m = slurm_map(cli);
        if (m)
            json_object_set_new(ans, "slurm", m);
        cli_print_json(ans);
        json_decref(ans);
        return CLI_OK;
    }
    json_t *ans = cli_get(cli, "/v1/queues", &rc);
    if (!ans)
        return rc;
    static const char *const hdr[] = {"QUEUE",   ">WEIGHT",   "GPU",   "NGPU",     "GPU-MEM",
                                      "CPU",     "MEM",       ">PEND", ">RUNNING", "GUARANTEE",
                                      "RESERVE", "PLACEMENT", "IDLE",  "OVERSUB",  "ALLOWED"};
    cli_table_t *t = cli_table_new(15, hdr);
    json_t *queues = json_object_get(ans, "queues");
    add_subtree(t, queues, NULL, 0);
    /* A queue whose parent is not in the answer (not expected): still listed, at the top. */
    size_t i;
    json_t *q;
    json_array_foreach(queues, i, q)
    {
        const char *p = json_string_value(json_object_get(q, "parent"));
        if (!p)
            continue;
        bool found = false;
        size_t k;
        json_t *o;
        json_array_foreach(queues, k, o)
        {
            const char *n = json_string_value(json_object_get(o, "name"));
            if (n && strcmp(n, p) == 0)
                found = true;
        }
        if (!found)
            add_row(t, q, 0);
    }
    printf("resources: USED/GUARANTEE/LIMIT ('-' = not governed / no cap)\n");
    cli_table_print(t, stdout);
    json_decref(ans);
    json_t *m = slurm_map(cli);
    if (m) {
        print_slurm_map(m);
        json_decref(m);
    }
    return CLI_OK;
}

/* Merge the members of src (a --guarantee or --limit object) into body[key]; a null src
 * replaces it.  0, or -1 when a member was already given (--max-gpu and --limit gpu=). */
static int merge_res(json_t *body, const char *key, json_t *src)
{
    json_t *cur = json_object_get(body, key);
    if (!cur || json_is_null(src) || json_is_null(cur)) {
        if (cur && (json_is_null(src) || json_is_null(cur))) {
            json_decref(src);
            return -1;
        }
        json_object_set_new(body, key, src);
        return 0;
    }
    const char *k;
    json_t *v;
    json_object_foreach(src, k, v)
    {
        if (json_object_get(cur, k)) {
            json_decref(src);
            return -1;
        }
        json_object_set(cur, k, v);
    }
    json_decref(src);
    return 0;
}

/* body["allow"][kind] = the names of list ("a,b,c"; "none" or "" for none).  0, or -1 when a
 * name is empty ("a,,b") or --open was given too. */
static int set_allow(json_t *body, const char *kind, const char *list)
{
    json_t *allow = json_object_get(body, "allow");
    if (allow && !json_is_object(allow))
        return -1;
    if (!allow) {
        allow = json_object();
        json_object_set_new(body, "allow", allow);
    }
    json_t *arr = json_array();
    if (strcmp(list, "none") != 0 && list[0]) {
        for (const char *p = list;;) {
            const char *e = strchrnul(p, ',');
            if (e == p) {
                json_decref(arr);
                return -1;
            }
            json_array_append_new(arr, json_stringn(p, (size_t)(e - p)));
            if (!*e)
                break;
            p = e + 1;
        }
    }
    json_object_set_new(allow, kind, arr);
    return 0;
}

int cmd_queues(cli_t *cli, int argc, char **argv)
{
    enum {
        O_PRIO = 256,
        O_CAP,
        O_PARENT,
        O_GUAR,
        O_LIMIT,
        O_WEIGHT,
        O_AUSERS,
        O_AGROUPS,
        O_AROLES,
        O_OPEN,
        O_RESERVE,
        O_PLACE,
        O_IDLE,
        O_OVERSUB
    };
    static const struct option opts[] = {
        {"priority", required_argument, NULL, O_PRIO},
        {"max-gpu", required_argument, NULL, O_CAP},
        {"parent", required_argument, NULL, O_PARENT},
        {"guarantee", required_argument, NULL, O_GUAR},
        {"limit", required_argument, NULL, O_LIMIT},
        {"weight", required_argument, NULL, O_WEIGHT},
        {"allow-users", required_argument, NULL, O_AUSERS},
        {"allow-groups", required_argument, NULL, O_AGROUPS},
        {"allow-roles", required_argument, NULL, O_AROLES},
        {"open", no_argument, NULL, O_OPEN},
        {"reserve-after", required_argument, NULL, O_RESERVE},
        {"placement", required_argument, NULL, O_PLACE},
        {"idle-reclaim", required_argument, NULL, O_IDLE},
        {"gpu-mem-oversubscribe", required_argument, NULL, O_OVERSUB},
        {"json", no_argument, NULL, CLI_OPT_JSON},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    json_t *body = json_object();
    tsl_error_t err;
    int c, rc = CLI_ERR;
    bool has_parent = false;
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case O_PRIO: {
            int64_t p;
            if (cli_parse_int(optarg, -1000, 1000, &p, &err) < 0) {
                rc = cli_usage(cli, "--priority: %s", err.text);
                goto out;
            }
            json_object_set_new(body, "priority", json_integer(p));
            break;
        }
        case O_WEIGHT: {
            int64_t w;
            if (cli_parse_int(optarg, 1, 1000, &w, &err) < 0) {
                rc = cli_usage(cli, "--weight: %s", err.text);
                goto out;
            }
            json_object_set_new(body, "weight", json_integer(w));
            break;
        }
        case O_PARENT:
            if (has_parent) {
                rc = cli_usage(cli, "--parent given twice");
                goto out;
            }
            has_parent = true;
            json_object_set_new(body, "parent", json_string(optarg));
            break;
        case O_CAP:
        case O_GUAR:
        case O_LIMIT: {
            json_t *r = NULL;
            const char *opt = c == O_GUAR ? "--guarantee" : c == O_LIMIT ? "--limit" : "--max-gpu";
            if (c == O_CAP) {
                char spec[64];
                snprintf(spec, sizeof spec, "gpu=%s", optarg);
                if (strlen(optarg) > 32 || cli_parse_resources(opt, spec, &r, &err) < 0) {
                    rc = cli_usage(cli, "--max-gpu: '%s': expected GPUs such as 1.5 or 2, or none",
                                   optarg);
                    goto out;
                }
            } else if (cli_parse_resources(opt, optarg, &r, &err) < 0) {
                rc = cli_usage(cli, "%s", err.text);
                goto out;
            }
            if (merge_res(body, c == O_GUAR ? "guarantee" : "limit", r) < 0) {
                rc = cli_usage(cli, "%s: a resource given twice (--limit, --max-gpu)", opt);
                goto out;
            }
            break;
        }
        case O_AUSERS:
        case O_AGROUPS:
        case O_AROLES: {
            const char *kind = c == O_AUSERS ? "users" : c == O_AGROUPS ? "groups" : "roles";
            if (set_allow(body, kind, optarg) < 0) {
                rc = cli_usage(
                    cli, "--allow-%s '%s': expected NAME,NAME,... or none%s", kind, optarg,
                    json_is_null(json_object_get(body, "allow")) ? " (not with --open)" : "");
                goto out;
            }
            break;
        }
        case O_OPEN:
            if (json_object_get(body, "allow")) {
                rc = cli_usage(cli, "--open removes every list: not with --allow-...");
                goto out;
            }
            json_object_set_new(body, "allow", json_null());
            break;
        case O_RESERVE: {
            int64_t secs;
            if (strcmp(optarg, "inherit") == 0) {
                json_object_set_new(body, "reserve_after", json_null());
            } else if (tsl_parse_seconds(optarg, QUEUES_RESERVE_MAX, &secs, &err) < 0) {
                rc = cli_usage(cli, "--reserve-after: %s (or inherit)", err.text);
                goto out;
            } else {
                json_object_set_new(body, "reserve_after", json_integer(secs));
            }
            break;
        }
        case O_IDLE: {
            int64_t secs = 0;
            if (strcmp(optarg, "inherit") == 0) {
                json_object_set_new(body, "idle_reclaim", json_null());
                break;
            }
            if (strcmp(optarg, "off") != 0 &&
                tsl_parse_seconds(optarg, 30 * 86400, &secs, &err) < 0) {
                rc = cli_usage(cli, "--idle-reclaim: %s (a duration up to 30d, off or inherit)",
                               err.text);
                goto out;
            }
            json_object_set_new(body, "idle_reclaim", json_integer(secs));
            break;
        }
        case O_OVERSUB: {
            uint64_t b = 0;
            if (strcmp(optarg, "inherit") == 0) {
                json_object_set_new(body, "gpu_mem_oversubscribe", json_null());
                break;
            }
            if (tsl_parse_size_unit(optarg, &b, &err) < 0 || b > (uint64_t)INT64_MAX) {
                rc = cli_usage(cli, "--gpu-mem-oversubscribe: %s (or 0: none, inherit)",
                               b > (uint64_t)INT64_MAX ? "too large" : err.text);
                goto out;
            }
            json_object_set_new(body, "gpu_mem_oversubscribe", json_integer((json_int_t)b));
            break;
        }
        case O_PLACE:
            if (strcmp(optarg, "spread") != 0 && strcmp(optarg, "pack") != 0 &&
                strcmp(optarg, "inherit") != 0) {
                rc = cli_usage(cli, "--placement '%s': expected spread, pack or inherit", optarg);
                goto out;
            }
            json_object_set_new(body, "placement",
                                strcmp(optarg, "inherit") == 0 ? json_null() : json_string(optarg));
            break;
        default:
            if ((rc = cli_common_option(cli, c, argc, argv, usage)) >= 0)
                goto out;
            rc = CLI_ERR;
        }
    }
    const char *action = optind < argc ? argv[optind] : "list";
    const char *name = optind + 1 < argc ? argv[optind + 1] : NULL;
    int nargs = argc - optind;
    if (strcmp(action, "list") == 0) {
        if (nargs > 1 || json_object_size(body)) {
            rc = cli_usage(cli, "list takes no arguments or options but --json");
            goto out;
        }
        rc = list(cli);
        goto out;
    }
    bool add = strcmp(action, "add") == 0, set = strcmp(action, "set") == 0,
         rm = strcmp(action, "rm") == 0;
    if (!add && !set && !rm) {
        rc = cli_usage(cli, "unknown action '%s' (list, add, set, rm)", action);
        goto out;
    }
    if (nargs != 2) {
        rc = cli_usage(cli, "%s takes one queue name", action);
        goto out;
    }
    if (rm && json_object_size(body)) {
        rc = cli_usage(cli, "rm takes no options");
        goto out;
    }
    if (set && has_parent) {
        rc = cli_usage(cli, "--parent is set at creation only (rm and add the queue to move it)");
        goto out;
    }
    if (set && !json_object_size(body)) {
        rc = cli_usage(cli, "set needs --guarantee, --limit, --weight, --priority, --allow-..., "
                            "--open, --reserve-after, --placement, --idle-reclaim or "
                            "--gpu-mem-oversubscribe");
        goto out;
    }
    char path[256];
    snprintf(path, sizeof path, "/v1/queues/%s", name);
    if (strchr(name, '/') || strchr(name, '?') || strchr(name, '%') || strchr(name, '#')) {
        rc = cli_usage(cli, "'%s': not a queue name", name);
        goto out;
    }
    json_t *ans = NULL;
    if (add) {
        json_object_set_new(body, "name", json_string(name));
        if (cli_call(cli, "POST", "/v1/queues", body, &ans) < 0)
            goto out;
    } else if (set) {
        if (cli_call(cli, "PATCH", path, body, &ans) < 0)
            goto out;
    } else if (cli_call(cli, "DELETE", path, NULL, NULL) < 0) {
        goto out;
    }
    if (cli->json && ans)
        cli_print_json(ans);
    else if (!cli->json)
        printf("queue %s %s\n", name, add ? "created" : set ? "changed" : "removed");
    json_decref(ans);
    rc = CLI_OK;
out:
    json_decref(body);
    return rc;
}
