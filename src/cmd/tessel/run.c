/* run.c - `tessel run`: submit a job (POST /v1/jobs); in the foreground, stream its stdout and
 * stderr (two followed log requests) and exit with its status; with -d, print its id.
 *
 * Foreground life cycle: submit -> follow both streams until tesseld ends them (the job has
 * finished and all output was sent) -> read the final job -> exit status (cli.h).  Ctrl-C (or
 * SIGTERM, SIGHUP) cancels the job and keeps streaming until it has ended; a second one detaches.
 * A lost connection (tesseld restarting) is retried from the byte offsets already printed.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cmd/tessel/cli.h"
#include "libutil/batchspec.h"
#include "libutil/duration.h"
#include "libutil/size.h"

extern char **environ;

/* How long a foreground run keeps trying to reach a tesseld that went away (restart after a
 * crash or an upgrade) before it gives up and leaves the job to `tessel logs -f`. */
#define RUN_RECONNECT_S 60
/* Pause between two attempts to reach tesseld again. */
#define RUN_RETRY_MS 250
/* How long one long poll of a pending job lasts (GET /v1/jobs/{id}/wait?until=started): it
 * answers at the job's start, else after this with why it still waits: a reason changes at
 * most once a scheduling cycle, and a person reads a new line within a second. */
#define RUN_WAIT_POLL_MS 500
/* One long poll for the end of a job whose logs have ended (tesseld answers at the end). */
#define RUN_WAIT_END_S 5

static void usage(FILE *f)
{
    fprintf(f,
            "usage: tessel run [OPTION]... [--] COMMAND [ARG]...\n"
            "       tessel run --service jupyter [OPTION]... [-- COMMAND [ARG]...]\n"
            "Submit COMMAND as a job.  In the foreground, stream its output (stdout to stdout,\n"
            "stderr to stderr) and exit with its status; Ctrl-C cancels the job.\n"
            "\n"
            "  --gpu FRACTION     a share of one GPU (0.5, 0.25; at most 3 decimals), or a whole\n"
            "                     number of GPUs (1, 2)\n"
            "  --gpus N           N whole GPUs\n"
            "  --gpu-mem SIZE     GPU-memory limit per GPU (8G, 512M); default: the GPU's memory\n"
            "                     times the share\n"
            "  --gpu-mem-oversubscribe SIZE  let allocations past --gpu-mem spill into up to\n"
            "                     SIZE of host memory per GPU (16G; 0: none); default: its\n"
            "                     queue's, which is also the most it may ask; slow (host\n"
            "                     memory over the bus); times the GPUs within --mem, which\n"
            "                     tesseld with cgroups requires\n"
            "  --cpu N            CPU cores (2, 0.5)\n"
            "  --mem SIZE         memory limit (16G)\n"
            "  --queue NAME       queue (default: default; a project's jobs go to its queue)\n"
            "  --project NAME     the job's project (default: your default project, see\n"
            "                     `tessel projects default`)\n"
            "  --class CLASS      interactive, training (default) or inference\n"
            "  --priority N       -1000..1000, higher runs first within the queue (default 0)\n"
            "  --name NAME        a label for people\n"
            "  --cwd DIR          working directory (default: the current directory)\n"
            "  --image NAME[:TAG] run in a container of this image (`tessel images` lists\n"
            "                     them), with the job's slice, user, cwd and environment\n"
            "  --folder NAME[:ro] mount a virtual folder at /tessel/folders/NAME (repeat it;\n"
            "                     :ro read-only; `tessel folders` lists yours; a folder\n"
            "                     measured at or over its quota mounts :ro only)\n"
            "  --service NAME=PORT  a web service of the job, listening on 127.0.0.1:PORT in\n"
            "                     the job's own network: tesseld serves it to you (and admins)\n"
            "                     at a URL of its own, printed when the job starts (repeat it,\n"
            "                     at most 4; `tessel open JOB NAME` for a new URL)\n"
            "  --service jupyter  Jupyter (jupyter-notebook) on port 8888; without COMMAND,\n"
            "                     the job runs it (tessel notebook is the same).  A job with\n"
            "                     services is of class interactive unless --class says\n"
            "The job gets this environment (as sbatch --export=ALL), less the variables Tessel\n"
            "sets inside the job (CUDA_VISIBLE_DEVICES, TESSEL_*: see docs/cli.md).\n"
            "  -e, --env KEY[=VALUE]  set KEY in the job's environment (from ours without =VALUE)\n"
            "  --env-file FILE    KEY=VALUE lines (blank lines and # comments skipped)\n"
            "  --no-env           not this environment: only --env, --env-file and Tessel's own\n"
            "  --export=ALL|NONE|KEY[=VALUE],...  Slurm's spelling: ALL (the default), NONE\n"
            "                     (--no-env), a list (only those), or ALL,KEY=VALUE,...\n"
            "  --shell            run the single ARG with /bin/sh -c\n"
            "  --no-requeue       when the scheduler preempts the job, end it (state preempted,\n"
            "                     exit 123) instead of putting it back in its queue to start\n"
            "                     again from the beginning (the default)\n"
            "  --preemptible=suspend|requeue|never  what a preemption does to a training\n"
            "                     job: suspend (the default: its GPU memory checkpointed and\n"
            "                     given back, the job resumed where it was once there is room;\n"
            "                     requeued where the driver cannot), requeue (killed and put\n"
            "                     back), never (not preempted: it must fit its queue's\n"
            "                     guarantee); other classes are never preempted\n"
            "  --idle-reclaim=DURATION|off  give the job's GPU memory back after DURATION\n"
            "                     (30m, 1h) without GPU work, resumed at its next CUDA call;\n"
            "                     off: never (default: its queue's idle_reclaim); at least\n"
            "                     tesseld's floor (its idle-reclaim-min, 5m by default);\n"
            "                     at most its queue's time, unless an admin submits it\n"
            "  -t, --time TIME    time limit: MM, MM:SS, HH:MM:SS, D-HH[:MM[:SS]] or 30s, 10m,\n"
            "                     2h, 1d; at the limit the job gets SIGTERM, then SIGKILL, and\n"
            "                     ends failed with \"time limit\" (time suspended not counted)\n"
            "  --after JOB[:ok|any|notok][,...]  start once each JOB has succeeded (ok, the\n"
            "                     default), ended (any) or failed (notok); --dependency\n"
            "                     afterok:12:13,afterany:14 (Slurm's form) is the same\n"
            "  --array SPEC       one job per index: 0-99, 1,3,5, 0-10:2, with %%N for at most\n"
            "                     N at once (0-99%%4); each gets TESSEL_ARRAY_TASK_ID; implies -d\n"
            "  -it                give the job a terminal and attach this one to it (as\n"
            "                     docker run -it): colours, window size, Ctrl-C reach the job;\n"
            "                     Ctrl-P Ctrl-Q detaches (tessel attach JOB returns to it)\n"
            "  --tty              the job gets a terminal (-t alone is --time); a job with a\n"
            "                     terminal is of class interactive unless --class says\n"
            "  -i, --interactive  with --tty: send what is typed here (-it is both)\n"
            "  -d, --detach       print the job id and return at once\n"
            "  --quiet            no progress lines on stderr\n"
            "  --json             with -d: print the job object\n"
            "\n"
            "Exit status (foreground): the job's exit code; 128+N when signal N killed it;\n"
            "123 preempted, 124 cancelled, 125 it could not start; 1 an error of tessel itself\n"
            "(rejected request, tesseld unreachable), 2 a usage error.\n");
}

void run_opts_free(run_opts_t *o)
{
    free(o->env);
    o->env = NULL;
    free(o->env_files);
    o->env_files = NULL;
    free(o->folders);
    o->folders = NULL;
    o->nfolders = 0;
    for (int i = 0; i < o->nowned; i++)
        free(o->owned[i]);
    free(o->owned);
    o->owned = NULL;
    o->nowned = 0;
}

/* --export=ALL|NONE|KEY[=VALUE],... (sbatch): ALL keeps the caller's environment, NONE drops
 * it, KEY items are --env items; a list without ALL means only the listed ones. */
static int parse_export(cli_t *cli, run_opts_t *o, const char *arg)
{
    char *copy = strdup(arg);
    if (!copy)
        return cli_fail("out of memory");
    o->owned[o->nowned++] = copy;
    bool all = false, items = false;
    tsl_error_t err;
    char *save = NULL;
    for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (strcmp(t, "ALL") == 0) {
            all = true;
        } else if (strcmp(t, "NONE") == 0) {
            o->no_env = true;
        } else {
            if (cli_env_item(t, &err) < 0)
                return cli_usage(cli, "--export: %s", err.text);
            o->env[o->nenv++] = t;
            items = true;
        }
    }
    if (all)
        o->no_env = false;
    else if (items)
        o->no_env = true;
    else if (!o->no_env)
        return cli_usage(cli, "--export: '%s': expected ALL, NONE or KEY[=VALUE],...", arg);
    return 0;
}

/* --service's value: "jupyter", or NAME=PORT (tesseld checks it again). */
static bool service_valid(const char *v)
{
    if (strcmp(v, "jupyter") == 0)
        return true;
    const char *eq = strchr(v, '=');
    size_t n = eq ? (size_t)(eq - v) : 0;
    if (!eq || n < 1 || n > 16 || v[0] < 'a' || v[0] > 'z' || v[n - 1] == '-' ||
        strspn(v, "abcdefghijklmnopqrstuvwxyz0123456789-") != n)
        return false;
    char *end;
    errno = 0;
    long port = strtol(eq + 1, &end, 10);
    return eq[1] >= '0' && eq[1] <= '9' && !*end && !errno && port >= 1 && port <= 65535;
}

int run_parse(cli_t *cli, int argc, char **argv, run_opts_t *o)
{
    enum {
        O_GPU = 256,
        O_GPUS,
        O_GPU_MEM,
        O_GPU_OVERSUB,
        O_CPU,
        O_MEM,
        O_QUEUE,
        O_PROJECT,
        O_CLASS,
        O_PRIO,
        O_NAME,
        O_CWD,
        O_SHELL,
        O_QUIET,
        O_JSON,
        O_NOREQUEUE,
        O_PREEMPTIBLE,
        O_IDLE_RECLAIM,
        O_ENV_FILE,
        O_NO_ENV,
        O_EXPORT,
        O_AFTER,
        O_ARRAY,
        O_IMAGE,
        O_TTY,
        O_FOLDER,
        O_SERVICE
    };
    static const struct option opts[] = {
        {"gpu", required_argument, NULL, O_GPU},
        {"gpus", required_argument, NULL, O_GPUS},
        {"gpu-mem", required_argument, NULL, O_GPU_MEM},
        {"gpu-mem-oversubscribe", required_argument, NULL, O_GPU_OVERSUB},
        {"cpu", required_argument, NULL, O_CPU},
        {"mem", required_argument, NULL, O_MEM},
        {"queue", required_argument, NULL, O_QUEUE},
        {"project", required_argument, NULL, O_PROJECT},
        {"class", required_argument, NULL, O_CLASS},
        {"priority", required_argument, NULL, O_PRIO},
        {"name", required_argument, NULL, O_NAME},
        {"cwd", required_argument, NULL, O_CWD},
        {"env", required_argument, NULL, 'e'},
        {"env-file", required_argument, NULL, O_ENV_FILE},
        {"no-env", no_argument, NULL, O_NO_ENV},
        {"export", required_argument, NULL, O_EXPORT},
        {"shell", no_argument, NULL, O_SHELL},
        {"detach", no_argument, NULL, 'd'},
        {"quiet", no_argument, NULL, O_QUIET},
        {"no-requeue", no_argument, NULL, O_NOREQUEUE},
        {"preemptible", required_argument, NULL, O_PREEMPTIBLE},
        {"idle-reclaim", required_argument, NULL, O_IDLE_RECLAIM},
        {"json", no_argument, NULL, O_JSON},
        {"time", required_argument, NULL, 't'},
        {"after", required_argument, NULL, O_AFTER},
        {"dependency", required_argument, NULL, O_AFTER},
        {"array", required_argument, NULL, O_ARRAY},
        {"image", required_argument, NULL, O_IMAGE},
        {"tty", no_argument, NULL, O_TTY},
        {"interactive", no_argument, NULL, 'i'},
        {"folder", required_argument, NULL, O_FOLDER},
        {"service", required_argument, NULL, O_SERVICE},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    memset(o, 0, sizeof *o);
    o->gpu_milli = -1;
    o->gpus = -1;
    /* Room for every --env, and every item of every --export (at most one per comma). */
    size_t nitems = (size_t)argc + 1;
    for (int i = 0; i < argc; i++)
        for (const char *p = argv[i]; *p; p++)
            nitems += *p == ',';
    o->caller_env = environ;
    o->env = calloc(nitems, sizeof *o->env);
    o->env_files = calloc((size_t)argc + 1, sizeof *o->env_files);
    o->owned = calloc((size_t)argc + 1, sizeof *o->owned);
    o->folders = calloc((size_t)argc + 1, sizeof *o->folders);
    if (!o->env || !o->env_files || !o->owned || !o->folders)
        return cli_fail("out of memory");
    tsl_error_t err;
    int c, rc;
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "+:de:hit:", opts, NULL)) != -1) {
        switch (c) {
        case O_GPU:
            if (cli_parse_gpu(optarg, &o->gpu_milli, &err) < 0)
                return cli_usage(cli, "%s", err.text);
            break;
        case O_GPUS:
            if (cli_parse_gpus(optarg, &o->gpus, &err) < 0)
                return cli_usage(cli, "%s", err.text);
            break;
        case O_GPU_MEM:
            if (cli_parse_size(optarg, &o->gpu_mem, &err) < 0)
                return cli_usage(cli, "--gpu-mem: %s", err.text);
            break;
        case O_GPU_OVERSUB:
            if (tsl_parse_size(optarg, &o->gpu_oversub, &err) < 0)
                return cli_usage(cli, "--gpu-mem-oversubscribe: %s", err.text);
            o->gpu_oversub_set = true;
            break;
        case O_CPU:
            if (cli_parse_cpu(optarg, &o->cpu, &err) < 0)
                return cli_usage(cli, "%s", err.text);
            break;
        case O_MEM:
            if (cli_parse_size(optarg, &o->mem, &err) < 0)
                return cli_usage(cli, "--mem: %s", err.text);
            break;
        case O_QUEUE:
            o->queue = optarg;
            break;
        case O_PROJECT:
            o->project = optarg;
            break;
        case O_CLASS:
            if (cli_parse_class(optarg, &err) < 0)
                return cli_usage(cli, "%s", err.text);
            o->klass = optarg;
            break;
        case O_PRIO:
            if (cli_parse_int(optarg, -1000, 1000, &o->priority, &err) < 0)
                return cli_usage(cli, "--priority: %s", err.text);
            o->has_priority = true;
            break;
        case O_NAME:
            o->name = optarg;
            break;
        case O_CWD:
            if (optarg[0] != '/')
                return cli_usage(cli, "--cwd: '%s': must be an absolute path", optarg);
            o->cwd = optarg;
            break;
        case 'e':
            if (cli_env_item(optarg, &err) < 0)
                return cli_usage(cli, "--env: %s", err.text);
            o->env[o->nenv++] = optarg;
            break;
        case O_ENV_FILE:
            o->env_files[o->nenv_files++] = optarg;
            break;
        case O_NO_ENV:
            o->no_env = true;
            break;
        case O_EXPORT:
            if ((rc = parse_export(cli, o, optarg)) != 0)
                return rc;
            break;
        case O_SHELL:
            o->shell = true;
            break;
        case 'd':
            o->detach = true;
            break;
        case O_QUIET:
            o->quiet = true;
            break;
        case O_NOREQUEUE:
            o->no_requeue = true;
            break;
        case O_PREEMPTIBLE:
            if (strcmp(optarg, "suspend") != 0 && strcmp(optarg, "requeue") != 0 &&
                strcmp(optarg, "never") != 0)
                return cli_usage(cli, "--preemptible: suspend, requeue or never, not '%s'", optarg);
            o->preemptible = optarg;
            break;
        case O_IDLE_RECLAIM: {
            /* tesseld's bound (TESSD_IDLE_RECLAIM_MAX): 30 days */
            int64_t secs;
            tsl_error_t ierr;
            if (strcmp(optarg, "off") != 0 &&
                tsl_parse_seconds(optarg, 30 * 86400, &secs, &ierr) < 0)
                return cli_usage(cli, "--idle-reclaim: %s (a duration such as 30m, or off)",
                                 ierr.text);
            o->idle_reclaim = optarg;
            break;
        }
        case O_JSON:
            cli->json = true;
            break;
        /* Batch options (libutil/batchspec.h): checked here, sent as written. */
        case 't': {
            /* -it and -ti (docker's spelling) are --tty -i: -t alone is --time (Slurm's).
             * getopt took "-it" as -i, then -t with the next word as its argument (given
             * back here), and "-ti" as -t with the argument "i". */
            if (optind >= 2 && strcmp(argv[optind - 2], "-it") == 0 && optarg == argv[optind - 1]) {
                o->tty = o->interactive = true;
                optind--;
                break;
            }
            if (strcmp(argv[optind - 1], "-ti") == 0 && optarg == argv[optind - 1] + 2) {
                o->tty = o->interactive = true;
                break;
            }
            int64_t s;
            if (tsl_parse_duration(optarg, &s, &err) < 0)
                return cli_usage(cli, "--time: %s", err.text);
            o->time_limit = optarg;
            break;
        }
        case O_AFTER: {
            tsl_dep_t deps[TSL_DEPS_MAX];
            size_t n;
            if (tsl_parse_deps(optarg, deps, TSL_DEPS_MAX, &n, &err) < 0)
                return cli_usage(cli, "--after: %s", err.text);
            o->after = optarg;
            break;
        }
        case O_ARRAY: {
            static tsl_array_t a;
            if (tsl_parse_array(optarg, &a, &err) < 0)
                return cli_usage(cli, "--array: %s", err.text);
            o->array = optarg;
            o->detach = true; /* an array is many jobs: followed with tessel ps / logs */
            break;
        }
        case O_FOLDER:
            /* The name and the right are tesseld's; a name that is not one is caught here. */
            if (!optarg[0] || strpbrk(optarg, "/ "))
                return cli_usage(cli, "--folder: '%s' is not NAME or NAME:ro", optarg);
            o->folders[o->nfolders++] = optarg;
            break;
        case O_SERVICE:
            if (o->nservices >= RUN_SERVICES_MAX)
                return cli_usage(cli, "--service: at most %d", RUN_SERVICES_MAX);
            if (!service_valid(optarg))
                return cli_usage(cli,
                                 "--service: '%s' is not jupyter or NAME=PORT (NAME: 1 to 16 of "
                                 "a-z, 0-9 and '-', starting with a letter; PORT: 1-65535)",
                                 optarg);
            o->services[o->nservices++] = optarg;
            break;
        case O_IMAGE:
            /* Checked by tesseld (the name and the store); only an empty one here. */
            if (!optarg[0])
                return cli_usage(cli, "--image: an image name is needed (tessel images)");
            o->image = optarg;
            break;
        case O_TTY:
            o->tty = true;
            break;
        case 'i':
            o->interactive = true;
            break;
        case 'h':
            usage(stdout);
            return -1;
        default:
            return cli_bad_option(cli, argc, argv, c);
        }
    }
    o->argv = argv + optind;
    o->argc = argc - optind;
    bool jupyter = false;
    for (int i = 0; i < o->nservices; i++)
        jupyter |= strcmp(o->services[i], "jupyter") == 0;
    if (o->argc == 0 && jupyter) {
        /* Jupyter's own command line (run by the shell), at the root of its own host name. */
        static char *jcmd[] = {(char *)RUN_JUPYTER_CMD, NULL};
        o->argv = jcmd;
        o->argc = 1;
        o->shell = true;
    }
    if (o->argc == 0)
        return cli_usage(cli, "no command given");
    if (o->argc > 256)
        return cli_usage(cli, "at most 256 arguments");
    if (o->shell && o->argc != 1)
        return cli_usage(cli, "--shell takes exactly one argument, the shell command");
    if (o->gpu_milli >= 0 && o->gpus >= 0)
        return cli_usage(cli, "give --gpu or --gpus, not both");
    if (o->gpu_mem && o->gpu_milli < 0 && o->gpus < 0)
        return cli_usage(cli, "--gpu-mem needs --gpu or --gpus");
    if (o->gpu_oversub && o->gpu_milli < 0 && o->gpus < 0)
        return cli_usage(cli, "--gpu-mem-oversubscribe needs --gpu or --gpus");
    if (o->interactive && !o->tty)
        return cli_usage(cli, "-i needs a terminal: -it (a job's stdin is its terminal or "
                              "nothing)");
    if (o->tty && o->array)
        return cli_usage(cli, "-it: one terminal, one job: not with --array");
    if (o->nservices && o->array)
        return cli_usage(cli, "--service: one job, one URL: not with --array");
    return 0;
}

json_t *run_request(const run_opts_t *o, tsl_error_t *err)
{
    json_t *r = json_object();
    json_t *argv = json_array();
    if (!r || !argv)
        goto nomem;
    json_object_set_new(r, "argv", argv);
    for (int i = 0; i < o->argc; i++)
        json_array_append_new(argv, json_string(o->argv[i]));
    if (o->shell)
        json_object_set_new(r, "shell", json_true());
    if (o->gpu_milli >= 0) {
        if (o->gpu_milli % 1000 == 0)
            json_object_set_new(r, "gpu", json_integer(o->gpu_milli / 1000));
        else
            json_object_set_new(r, "gpu", json_real((double)o->gpu_milli / 1000.0));
    }
    if (o->gpus >= 0)
        json_object_set_new(r, "gpus", json_integer(o->gpus));
    if (o->gpu_mem)
        json_object_set_new(r, "gpu_mem", json_integer((json_int_t)o->gpu_mem));
    if (o->gpu_oversub_set) /* 0 too: none, not its queue's default */
        json_object_set_new(r, "gpu_mem_oversubscribe", json_integer((json_int_t)o->gpu_oversub));
    if (o->cpu > 0)
        json_object_set_new(r, "cpu", json_real(o->cpu));
    if (o->mem)
        json_object_set_new(r, "mem", json_integer((json_int_t)o->mem));
    if (o->queue)
        json_object_set_new(r, "queue", json_string(o->queue));
    if (o->project)
        json_object_set_new(r, "project", json_string(o->project));
    if (o->klass)
        json_object_set_new(r, "class", json_string(o->klass));
    if (o->has_priority)
        json_object_set_new(r, "priority", json_integer(o->priority));
    if (o->no_requeue)
        json_object_set_new(r, "requeue", json_false());
    if (o->preemptible)
        json_object_set_new(r, "preemptible", json_string(o->preemptible));
    if (o->idle_reclaim)
        json_object_set_new(r, "idle_reclaim", json_string(o->idle_reclaim));
    if (o->name)
        json_object_set_new(r, "name", json_string(o->name));
    if (o->time_limit)
        json_object_set_new(r, "time_limit", json_string(o->time_limit));
    if (o->after)
        json_object_set_new(r, "after", json_string(o->after));
    if (o->array)
        json_object_set_new(r, "array", json_string(o->array));
    if (o->image)
        json_object_set_new(r, "image", json_string(o->image));
    if (o->tty)
        json_object_set_new(r, "tty", json_true());
    if (o->nservices > 0) {
        json_t *sv = json_array();
        for (int i = 0; i < o->nservices; i++) {
            const char *eq = strchr(o->services[i], '=');
            json_t *one = eq ? json_pack("{s:s%, s:i}", "name", o->services[i],
                                         (size_t)(eq - o->services[i]), "port", atoi(eq + 1))
                             : json_pack("{s:s, s:i}", "name", "jupyter", "port", RUN_JUPYTER_PORT);
            json_array_append_new(sv, one);
        }
        json_object_set_new(r, "services", sv);
    }
    if (o->nfolders > 0) {
        json_t *f = json_array();
        for (int i = 0; i < o->nfolders; i++)
            json_array_append_new(f, json_string(o->folders[i]));
        json_object_set_new(r, "folders", f);
    }
    if (o->cwd) {
        json_object_set_new(r, "cwd", json_string(o->cwd));
    } else {
        char *cwd = getcwd(NULL, 0);
        if (cwd)
            json_object_set_new(r, "cwd", json_string(cwd));
        free(cwd);
    }
    /* The environment: the caller's (unless --no-env), then --env-file, then --env/--export
     * items, a later one over an earlier one. */
    json_t *env = json_object();
    if (!env)
        goto nomem;
    json_object_set_new(r, "env", env);
    if (!o->no_env) {
        size_t skipped;
        cli_env_export_all(o->caller_env, env, &skipped);
        if (skipped && !o->quiet)
            fprintf(stderr, "tessel: %zu variable(s) of this environment not sent (not UTF-8)\n",
                    skipped);
    }
    for (int i = 0; i < o->nenv_files; i++)
        if (cli_env_file(o->env_files[i], env, err) < 0)
            goto bad;
    for (int i = 0; i < o->nenv; i++)
        if (cli_env_set(env, o->env[i], err) < 0)
            goto bad;
    if (cli_env_check_size(env, err) < 0)
        goto bad;
    if (o->no_env && json_object_size(env) == 0)
        json_object_del(r, "env");
    /* json_string gives NULL for text that is not UTF-8; set_new then fails silently. */
    for (int i = 0; i < o->argc; i++) {
        if (!json_is_string(json_array_get(argv, (size_t)i))) {
            json_decref(r);
            errno = EINVAL;
            tsl_errprintf(err, "argument %d is not valid UTF-8", i + 1);
            return NULL;
        }
    }
    return r;
bad:
    json_decref(r);
    return NULL;
nomem:
    json_decref(r);
    errno = ENOMEM;
    tsl_errprintf(err, "out of memory");
    return NULL;
}

int run_exit_status(const json_t *job)
{
    const char *state = json_string_value(json_object_get(job, "state"));
    json_t *code = json_object_get(job, "exit_code");
    json_t *sig = json_object_get(job, "signal");
    if (!state)
        return CLI_ERR;
    if (strcmp(state, "succeeded") == 0)
        return 0;
    if (strcmp(state, "cancelled") == 0)
        return TESSEL_EXIT_CANCELLED;
    if (strcmp(state, "preempted") == 0)
        return TESSEL_EXIT_PREEMPTED;
    if (strcmp(state, "failed") == 0) {
        if (json_is_integer(code))
            return (int)(json_integer_value(code) & 0xff);
        if (json_is_integer(sig))
            return 128 + (int)(json_integer_value(sig) & 0x7f);
        return TESSEL_EXIT_NOSTART;
    }
    return CLI_ERR;
}

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
    (void)sig;
    interrupted = 1;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static bool is_active(const json_t *job)
{
    const char *s = json_string_value(json_object_get(job, "state"));
    return s &&
           (strcmp(s, "pending") == 0 || strcmp(s, "running") == 0 || strcmp(s, "suspended") == 0);
}

/* A lost connection to tesseld (it restarts, or is stopping): true to try again, false once
 * RUN_RECONNECT_S have passed since the connection was first lost. */
static bool keep_trying(time_t *lost_since, const char *what, bool quiet)
{
    time_t now = time(NULL);
    if (!*lost_since) {
        *lost_since = now;
        if (!quiet)
            fprintf(stderr, "tessel: %s; trying again\n", what);
    } else if (now - *lost_since > RUN_RECONNECT_S) {
        return false;
    }
    sleep_ms(RUN_RETRY_MS);
    return true;
}

/* One line for an error about job id: tesseld's own messages name the job already. */
static int job_fail(cli_t *cli, int64_t id, const tsl_error_t *err)
{
    if (tclient_status(cli->client) >= 400)
        return cli_fail("%s", err->text);
    return cli_fail("job %lld: %s", (long long)id, err->text);
}

/* "gpu0 (a 0.5 slice, 8.00 GiB)", "gpu0, gpu1 (whole GPUs, 16.0 GiB each)", "no GPU": where
 * the job's placement (the API's "placement") puts it. */
static void where_cell(const json_t *placement, char *buf, size_t len)
{
    size_t n = 0, i;
    json_t *p;
    buf[0] = '\0';
    /* tesseld --slurm: the Slurm node(s) the job runs on (docs/slurm-backend.md). */
    const char *node = json_string_value(json_object_get(json_array_get(placement, 0), "node"));
    if (node) {
        char *e = cli_escape(node);
        snprintf(buf, len, "Slurm node %s", e ? e : "?");
        free(e);
        return;
    }
    json_array_foreach(placement, i, p)
    {
        n += (size_t)snprintf(buf + n, n < len ? len - n : 0, "%sgpu%lld", i ? ", " : "",
                              (long long)json_integer_value(json_object_get(p, "gpu")));
        if (n >= len)
            return;
    }
    if (n == 0) {
        snprintf(buf, len, "no GPU");
        return;
    }
    const json_t *first = json_array_get(placement, 0);
    json_int_t milli = json_integer_value(json_object_get(first, "milli"));
    char share[32], mem[32];
    cli_format_milli(milli, share, sizeof share);
    tsl_format_size((uint64_t)json_integer_value(json_object_get(first, "mem")), mem, sizeof mem);
    if (milli < 1000)
        snprintf(buf + n, len - n, " (a %s slice, %s)", share, mem);
    else
        snprintf(buf + n, len - n, " (whole GPU%s, %s%s)", i > 1 ? "s" : "", mem,
                 i > 1 ? " each" : "");
}

/* The job at path (/v1/jobs/ID), once it has started (until "started") or finished
 * ("finished"), or after timeout_ms: a long poll that tesseld answers at the change, so no
 * fixed sleep.  A tesseld without the wait API (an older one: 404 for the route) gets plain
 * GETs from then on, RUN_WAIT_POLL_MS apart, as before the wait API.  0, or -1 with err (as
 * tclient_request). */
static int wait_job(cli_t *cli, const char *path, const char *until, long timeout_ms, json_t **job,
                    tsl_error_t *err)
{
    static bool no_wait_api;
    if (!no_wait_api) {
        char wpath[128];
        snprintf(wpath, sizeof wpath, "%s/wait?until=%s&timeout=%ld.%03ld", path, until,
                 timeout_ms / 1000, timeout_ms % 1000);
        if (tclient_request(cli->client, "GET", wpath, NULL, job, err) == 0)
            return 0;
        if (tclient_status(cli->client) != 404)
            return -1;
        /* 404: no such job, or no such route: the plain GET below tells which. */
        no_wait_api = true;
    }
    if (tclient_request(cli->client, "GET", path, NULL, job, err) < 0)
        return -1;
    const char *st = json_string_value(json_object_get(*job, "state"));
    if (strcmp(until, "started") == 0 ? st && strcmp(st, "pending") == 0 : is_active(*job))
        sleep_ms(RUN_WAIT_POLL_MS);
    return 0;
}

/* While the job is pending: why it waits, on stderr, a line each time the reason changes (none
 * with quiet); then, if it waited (or stderr is a terminal), one line when it starts, saying
 * where.  Returns once it is not pending, on a signal (interrupted stays set: the caller's loop
 * cancels the job), or when tesseld does not answer (the caller's loop deals with that). */
static void wait_start(cli_t *cli, int64_t id, const char *path, bool quiet)
{
    char last[1024] = "";
    bool waited = false;
    while (!interrupted) {
        json_t *job = NULL;
        /* No plain look first: a job just submitted has no reason yet (the pass after the 201
         * writes it), and the long poll answers at once when it has started. */
        if (wait_job(cli, path, "started", RUN_WAIT_POLL_MS, &job, NULL) < 0)
            return;
        const char *st = json_string_value(json_object_get(job, "state"));
        const char *why = json_string_value(json_object_get(job, "reason"));
        if (st && strcmp(st, "pending") == 0) {
            if (why && strcmp(why, last) != 0) {
                snprintf(last, sizeof last, "%s", why);
                waited = true;
                if (!quiet) {
                    char *e = cli_escape(why);
                    fprintf(stderr, "tessel: job %lld is pending: %s\n", (long long)id, e);
                    free(e);
                }
            }
            json_decref(job);
            continue;
        }
        /* started: running now, or it ran already (between two looks) */
        if (!quiet && st && (waited || isatty(2)) &&
            json_is_string(json_object_get(job, "started_at"))) {
            char where[256];
            where_cell(json_object_get(job, "placement"), where, sizeof where);
            fprintf(stderr, "tessel: job %lld started on %s\n", (long long)id, where);
        }
        json_decref(job);
        return;
    }
}

/* Follow the job to its end; returns the exit status for `tessel run`. */
static int foreground(cli_t *cli, int64_t id, bool quiet, bool services)
{
    char path[64];
    snprintf(path, sizeof path, "/v1/jobs/%lld", (long long)id);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);

    int out_fd = 1, err_fd = 2;
    tclient_log_t logs[2] = {
        {.stream = "stdout", .write = cli_write_fd, .arg = &out_fd},
        {.stream = "stderr", .write = cli_write_fd, .arg = &err_fd},
    };
    bool cancelling = false;
    time_t lost_since = 0;
    tsl_error_t err;
    json_t *job = NULL;
    wait_start(cli, id, path, quiet);
    if (services && !quiet)
        run_print_service_urls(cli, id);
    for (;;) {
        if (tclient_logs(cli->client, id, logs, 2, true, &interrupted, &err) == 0) {
            /* tesseld ends the streams when the job has finished, and also when it stops:
             * ask which. */
            json_decref(job);
            job = NULL;
            if (wait_job(cli, path, "finished", RUN_WAIT_END_S * 1000L, &job, &err) == 0) {
                lost_since = 0;
                if (!is_active(job))
                    break;
                /* Still active after the wait: tesseld is stopping (the streams and the
                 * wait end then); it answers again after its restart. */
                sleep_ms(RUN_RETRY_MS);
                continue;
            }
        }
        if (errno == EINTR) {
            interrupted = 0;
            if (cancelling) {
                cli_fail("detached from job %lld, which is being cancelled", (long long)id);
                json_decref(job);
                return CLI_ERR;
            }
            cancelling = true;
            if (!quiet)
                fprintf(stderr, "tessel: cancelling job %lld (again to detach)\n", (long long)id);
            char cpath[96];
            snprintf(cpath, sizeof cpath, "%s/cancel", path);
            if (tclient_request(cli->client, "POST", cpath, NULL, NULL, &err) < 0 &&
                errno != EEXIST)
                job_fail(cli, id, &err);
            continue;
        }
        if (cli_conn_lost(errno)) {
            if (keep_trying(&lost_since, err.text, quiet)) {
                /* tesseld answers again: a later outage gets its own RUN_RECONNECT_S. */
                json_t *probe = NULL;
                if (tclient_request(cli->client, "GET", path, NULL, &probe, NULL) == 0)
                    lost_since = 0;
                json_decref(probe);
                continue;
            }
            cli_fail("%s; job %lld may still run (tessel logs -f %lld)", err.text, (long long)id,
                     (long long)id);
            json_decref(job);
            return CLI_ERR;
        }
        json_decref(job);
        return job_fail(cli, id, &err);
    }
    int st = run_exit_status(job);
    const char *reason = json_string_value(json_object_get(job, "reason"));
    if (st == TESSEL_EXIT_NOSTART)
        cli_fail("job %lld could not start: %s", (long long)id, reason ? reason : "unknown");
    else if ((st == TESSEL_EXIT_CANCELLED || st == TESSEL_EXIT_PREEMPTED) && !quiet) {
        char *r = cli_escape(reason);
        fprintf(stderr, "tessel: job %lld %s%s%s\n", (long long)id,
                st == TESSEL_EXIT_CANCELLED ? "cancelled" : "preempted", reason ? ": " : "", r);
        free(r);
    }
    json_int_t pre = json_integer_value(json_object_get(job, "preemptions"));
    if (!quiet && pre > 0 && st != TESSEL_EXIT_PREEMPTED)
        fprintf(stderr, "tessel: job %lld was preempted and requeued %lld time(s) on its way\n",
                (long long)id, (long long)pre);
    json_decref(job);
    return st;
}

int cmd_run(cli_t *cli, int argc, char **argv)
{
    run_opts_t o;
    int rc = run_parse(cli, argc, argv, &o);
    if (rc != 0) {
        run_opts_free(&o);
        return rc < 0 ? CLI_OK : rc;
    }
    tsl_error_t err;
    json_t *req = run_request(&o, &err);
    if (!req) {
        run_opts_free(&o);
        return cli_usage(cli, "%s", err.text);
    }
    json_t *job = NULL;
    rc = cli_call(cli, "POST", "/v1/jobs", req, &job);
    json_decref(req);
    if (rc < 0) {
        run_opts_free(&o);
        return CLI_ERR;
    }
    json_int_t id = json_integer_value(json_object_get(job, "id"));
    if (o.detach) {
        if (cli->json)
            cli_print_json(job);
        else
            printf("%lld\n", (long long)id);
        rc = CLI_OK;
        if (o.nservices && !o.quiet)
            fprintf(stderr,
                    "tessel: job %lld: `tessel open %lld` gives the URL of its "
                    "service once it runs\n",
                    (long long)id, (long long)id);
    } else {
        if (!o.quiet && isatty(2)) {
            char *q = cli_escape(json_string_value(json_object_get(job, "queue")));
            fprintf(stderr, "tessel: job %lld submitted to queue %s (%s)\n", (long long)id, q,
                    o.tty ? "Ctrl-P Ctrl-Q detaches from its terminal" : "Ctrl-C cancels it");
            free(q);
        }
        fflush(stdout);
        if (o.tty) {
            /* The terminal once the job runs; a job that has ended by then shows its log. */
            char path[64];
            snprintf(path, sizeof path, "/v1/jobs/%lld", (long long)id);
            wait_start(cli, id, path, o.quiet);
            rc = cli_term_session(cli, id, NULL, 0, o.interactive, o.quiet);
            if (rc == CLI_TERM_GONE)
                rc = foreground(cli, id, o.quiet, false);
        } else {
            rc = foreground(cli, id, o.quiet, o.nservices > 0);
        }
    }
    json_decref(job);
    run_opts_free(&o);
    return rc;
}
