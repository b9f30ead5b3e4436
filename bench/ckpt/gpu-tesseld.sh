#!/bin/sh
# bench/ckpt/gpu-tesseld.sh - the suspend that gives the GPU back, through tesseld, on a real
# NVIDIA GPU (issue 21; docs/suspend.md, "On a real GPU"):
#
#   bench/ckpt/gpu-tesseld.sh [BUILD_DIR]
#
# Starts a tesseld of BUILD_DIR (default build; as root, --no-cgroups, a temporary data dir),
# runs a PyTorch job on half the GPU that fills 2 GiB with a pattern and waits, suspends it
# (POST /v1/jobs/ID/suspend), shows what nvidia-smi and the API say meanwhile, resumes it, and
# lets the job check its tensor (the same address, the same contents).  Needs python3 with
# torch (CUDA), curl and nvidia-smi.  TESSEL_LIBS: a directory of libraries for tesseld alone
# (a build copied to a GPU host that lacks tesseld's Debian libraries).
B=$(cd "${1:-build}" && pwd) || exit 2
L=${TESSEL_LIBS:-}
D=$(mktemp -d /tmp/tsl-dev.XXXXXX); chmod 711 "$D"
nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv,noheader
LD_LIBRARY_PATH=${L:-$LD_LIBRARY_PATH} "$B/bin/tesseld" --data-dir "$D/data" --listen 127.0.0.1:0 --socket "$D/s.sock" --no-cgroups \
    --allow-root-jobs >"$D/tesseld.log" 2>&1 &
TP=$!
i=0; while [ ! -s "$D/data/tesseld.addr" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done
U="http://$(cat "$D/data/tesseld.addr")"; TOK=$(cat "$D/data/admin.token")
api() { curl -s -m 120 -X "$1" -H "Authorization: Bearer $TOK" ${3:+-d "$3"} "$U$2"; }
api GET /v1/gpus | python3 -c 'import json,sys; g=json.load(sys.stdin)["gpus"]; print("gpus:", [(x.get("model"), x.get("mem")) for x in g])'
PY=$(command -v python3)
cat >"$D/job.py" <<'PYEOF'
import torch, os, time, sys
n = 2 * 1024**3 // 4
x = torch.arange(n, dtype=torch.int32, device="cuda") * 7 + 3
torch.cuda.synchronize()
ptr = x.data_ptr()
print("ready", hex(ptr), torch.cuda.memory_allocated() >> 20, "MiB", flush=True)
while not os.path.exists(sys.argv[1]):
    time.sleep(0.05)
ok = bool(torch.equal(x, torch.arange(n, dtype=torch.int32, device="cuda") * 7 + 3))
print("after", hex(x.data_ptr()), "same_addr", x.data_ptr() == ptr, "contents_ok", ok, flush=True)
PYEOF
chmod 644 "$D/job.py"
J=$(api POST /v1/jobs "{\"argv\":[\"$PY\",\"$D/job.py\",\"$D/go\"],\"gpu\":0.5,\"gpu_mem\":\"8G\",\"cwd\":\"$D\"}" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
echo "job $J"
i=0; while ! api GET "/v1/jobs/$J/logs?stream=stdout" | grep -q ready && [ $i -lt 250 ]; do sleep 0.2; i=$((i+1)); done
api GET "/v1/jobs/$J/logs?stream=stdout"
echo "nvidia-smi before:"; nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader
t0=$(date +%s.%N)
echo "suspend: $(api POST /v1/jobs/$J/suspend)"
t1=$(date +%s.%N)
echo "nvidia-smi while suspended:"; nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader
nvidia-smi --query-gpu=memory.used --format=csv,noheader
api GET "/v1/jobs/$J" | python3 -c 'import json,sys; j=json.load(sys.stdin); print("state", j["state"], "gpu_released", j.get("gpu_released"), "checkpoint", j.get("checkpoint"))'
t2=$(date +%s.%N)
echo "resume: $(api POST /v1/jobs/$J/resume)"
i=0; while [ "$(api GET /v1/jobs/$J | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])')" != running ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i+1)); done
t3=$(date +%s.%N)
touch "$D/go"
i=0; while ! api GET "/v1/jobs/$J/logs?stream=stdout" | grep -q after && [ $i -lt 150 ]; do sleep 0.2; i=$((i+1)); done
api GET "/v1/jobs/$J/logs?stream=stdout"
api GET "/v1/jobs/$J/logs?stream=stderr" | tail -5
python3 -c "print(\"suspend call %.2f s; resume to running %.2f s\" % ($t1 - $t0, $t3 - $t2))"
sleep 1; api GET "/v1/jobs/$J" | python3 -c 'import json,sys; j=json.load(sys.stdin); print("end state", j["state"], j.get("exit_code"))'
kill $TP; wait $TP
echo "--- tesseld.log (tail)"; tail -25 "$D/tesseld.log"
rm -rf "$D"
