-- job_submit.lua - Tessel's job_submit plugin for slurmctld (docs/slurm.md, "Refused at
-- submission"): a job whose --gpu-mem/--gpu-share cannot hold on any GPU of the cluster is
-- refused when it is submitted (sbatch, srun, salloc exit with the reason), before anything is
-- queued, instead of failing later where its steps start.
--
-- Install on the slurmctld host beside slurm.conf as job_submit.lua, with
-- `JobSubmitPlugins=lua` in slurm.conf, and the GPUs of every node in tessel_gpus.lua beside it
-- (the last section of `tessel slurm-conf` on each node, pasted one after the other; add a line
-- whole_gpus_as_shards() there to make whole-GPU jobs wait for a GPU without shard jobs, and
-- options_as_shards() to turn --gpu-mem/--gpu-share without GRES into shards).  Both
-- files must be root's and written only by root: slurmctld runs them.
--
-- What it sees: spank_tessel.so, where the job is submitted, puts the options as numbers into
-- the job's SPANK environment (TESSEL_GPU_MEM_BYTES, TESSEL_GPU_SHARE_PPM); the job's GRES come
-- from its tres_per_* fields.  A submitter can write that environment itself, so this check only
-- refuses early: the plugin checks the options again on the node where each step starts (the
-- only check that counts, with the GPU Slurm chose).  The cluster's view is the most any GPU
-- allows: a job refused here could run on no node; one accepted here can still be refused on a
-- node whose GPUs are smaller.
--
-- Written for Slurm 22.05 (Lua 5.1).  Other sites' job_submit rules can be added to
-- slurm_job_submit below, or this file's function called from theirs.

local M = {}

local PPM = 1000000

-- "9.00 GiB", as the plugin writes sizes (tsl_format_size).
function M.size(b)
    local units = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" }
    local u, v = 1, b
    while v >= 1024 and u < #units do
        v = v / 1024
        u = u + 1
    end
    if u == 1 then
        return string.format("%d B", b)
    elseif v >= 100 then
        return string.format("%.0f %s", v, units[u])
    elseif v >= 10 then
        return string.format("%.1f %s", v, units[u])
    end
    return string.format("%.2f %s", v, units[u])
end

-- Instructions tessel_gpus.lua may run: a cluster of thousands of GPUs takes a few per line.
local GPUS_MAX_INSTRUCTIONS = 10000000

-- The GPUs of the cluster from tessel_gpus.lua: lines gpu("NODE", INDEX, BYTES, SHARDS), run
-- with nothing but gpu() in reach.  A list of {node, index, mem, shards}, or nil and the reason.
-- Read as text (precompiled Lua, which Lua 5.1 does not verify, is refused), run in an empty
-- environment with the strings' methods out of reach ("x":rep(2^31)) and a bounded number of
-- instructions, so that a mistake in it cannot run commands, exhaust memory or hang slurmctld.
function M.load_gpus(path)
    local f, oerr = io.open(path, "rb")
    if not f then
        return nil, oerr
    end
    local text = f:read("*a")
    f:close()
    if not text then
        return nil, path .. ": cannot be read"
    end
    if string.sub(text, 1, 1) == "\27" then
        return nil, path .. ": precompiled Lua is refused (write gpu() lines as text)"
    end
    local chunk, err = loadstring(text, "@" .. path)
    if not chunk then
        return nil, err
    end
    local gpus = {}
    local env = {
        whole_gpus_as_shards = function()
            gpus.whole_as_shards = true
        end,
        options_as_shards = function()
            gpus.options_as_shards = true
        end,
        gpu = function(node, index, mem, shards)
            if type(node) ~= "string" or type(index) ~= "number" or type(mem) ~= "number" or
                type(shards) ~= "number" or mem <= 0 or shards < 0 then
                error("gpu(NODE, INDEX, BYTES, SHARDS) expected", 2)
            end
            gpus[#gpus + 1] = { node = node, index = index, mem = mem, shards = shards }
        end,
    }
    setfenv(chunk, env)
    local smt = getmetatable("")
    local index = smt.__index
    smt.__index = {}
    debug.sethook(function()
        error("runs too long (more than " .. GPUS_MAX_INSTRUCTIONS .. " instructions)", 2)
    end, "", GPUS_MAX_INSTRUCTIONS)
    local ok, e = pcall(chunk)
    debug.sethook()
    smt.__index = index
    if not ok then
        return nil, path .. ": " .. tostring(e)
    end
    return gpus
end

-- The job's GRES from its tres_per_* fields ("gres:shard:2", "gres/gpu:tesla:1", "gpu:1"):
-- whether it asked for any GPU or shard, and its shards per node (0 when not said per node).
function M.gres(job)
    local any, shards = false, 0
    for _, field in ipairs({ "tres_per_node", "tres_per_job", "tres_per_socket", "tres_per_task" }) do
        local v = job[field]
        if type(v) == "string" then
            for item in string.gmatch(v, "[^,]+") do
                local spec = string.gsub(item, "^gres[:/]", "")
                local name = string.match(spec, "^([^:]+)")
                local count = tonumber(string.match(spec, ":(%d+)$") or "1")
                if name == "gpu" or name == "shard" then
                    any = true
                end
                if name == "shard" and field == "tres_per_node" then
                    shards = count
                end
            end
        end
    end
    return any, shards
end

-- The options as the submitting spank_tessel.so passed them: bytes and ppm (0 when not given),
-- or nil and the reason when they are not numbers.
function M.options(job)
    local env = job.spank_job_env
    local mem, share = 0, 0
    if type(env) ~= "table" then
        return mem, share
    end
    for _, kv in pairs(env) do
        local k, v = string.match(kv, "^([^=]*)=(.*)$")
        if k == "TESSEL_GPU_MEM_BYTES" or k == "TESSEL_GPU_SHARE_PPM" then
            local n = tonumber(v)
            if not string.match(v, "^%d+$") or not n or n <= 0 or
                (k == "TESSEL_GPU_SHARE_PPM" and n > PPM) then
                return nil, string.format("%s=%s: not what spank_tessel.so writes", k, v)
            end
            if k == "TESSEL_GPU_MEM_BYTES" then
                mem = n
            else
                share = n
            end
        end
    end
    return mem, share
end

-- The whole-GPU items of a job's GRES: a list of {field, prefix, type, count, item} for each
-- "gpu" item of its tres_per_* fields ("gres:gpu:1", "gres/gpu:a100:2", "gpu"; count nil when
-- it is not a number), and whether it also asks for shards.
function M.gpu_items(job)
    local items, shards = {}, false
    for _, field in ipairs({ "tres_per_node", "tres_per_job", "tres_per_socket", "tres_per_task" }) do
        local v = job[field]
        if type(v) == "string" then
            for item in string.gmatch(v, "[^,]+") do
                local prefix = string.match(item, "^gres[:/]") or ""
                local parts = {}
                for p in string.gmatch(string.sub(item, #prefix + 1), "[^:]+") do
                    parts[#parts + 1] = p
                end
                if parts[1] == "shard" then
                    shards = true
                elseif parts[1] == "gpu" then
                    local kind, count = nil, 1
                    if #parts == 2 then
                        count = tonumber(string.match(parts[2], "^%d+$") or "")
                        if not count then
                            kind, count = parts[2], 1
                        end
                    elseif #parts >= 3 then
                        kind = parts[2]
                        count = #parts == 3 and tonumber(string.match(parts[3], "^%d+$") or "") or nil
                    end
                    items[#items + 1] = { field = field, prefix = prefix, type = kind, count = count,
                        item = item }
                end
            end
        end
    end
    return items, shards
end

-- With whole_gpus_as_shards() in tessel_gpus.lua: a job of one whole GPU per node
-- (--gres=gpu:1, other GRES beside it kept) asks instead for all the shards of one GPU
-- (--gres=shard:C, every GPU having C shards), so that it waits until a GPU has no shard job
-- left.  Slurm 22.05 counts gpu and shard apart and may give a GPU whole while its shards are
-- in use (docs/slurm.md); the nodes refuse a whole GPU that has shards, so any other whole-GPU
-- request (--gpus=N, --gres=gpu:TYPE:1, gpu:2, GPUs per task or socket, GPUs and shards
-- together, a cluster whose GPUs have unequal shard counts) is refused here, with the reason.
-- Returns the new tres_per_node; nil when the rule is off or the job asks for no whole GPU; or
-- nil and the reason to refuse it.
function M.whole_gpu_as_shards(job, gpus)
    if not gpus or not gpus.whole_as_shards then
        return nil
    end
    local items, shards = M.gpu_items(job)
    if #items == 0 then
        return nil
    end
    local it = items[1]
    if #items > 1 or shards or it.field ~= "tres_per_node" or it.type or it.count ~= 1 then
        return nil, string.format("whole GPUs are given as all the shards of one GPU on this "
            .. "cluster: ask for --gres=gpu:1 (one GPU per node, no type) or --gres=shard:N, "
            .. "not %s", it.item)
    end
    local count
    for _, g in ipairs(gpus) do
        if g.shards <= 0 or (count and g.shards ~= count) then
            return nil, "whole GPUs are given as all the shards of one GPU on this cluster, "
                .. "but its GPUs' shard counts differ: ask for --gres=shard:N"
        end
        count = g.shards
    end
    if not count then
        return nil, "whole GPUs are given as shards on this cluster, but tessel_gpus.lua names "
            .. "no GPU"
    end
    local out = {}
    for item in string.gmatch(job.tres_per_node, "[^,]+") do
        out[#out + 1] = item == it.item and string.format("%sshard:%d", it.prefix, count) or item
    end
    return table.concat(out, ",")
end

-- With options_as_shards() in tessel_gpus.lua, where every shard of the cluster stands for the
-- same memory: a job that gives --gpu-mem and/or --gpu-share but asks for no GPU or shard asks
-- for the shards that hold them ("0.25 of a GPU and 10 GiB": the larger of ceil(0.25 x C) and
-- ceil(10 GiB / a shard's memory)).  The new tres_per_node, or nil (then M.check refuses the
-- job: no GPU or shard, or more than a GPU's shards).
function M.options_as_shards(job, gpus, mem, share)
    if not gpus or not gpus.options_as_shards or (mem == 0 and share == 0) or M.gres(job) then
        return nil
    end
    local count, part
    for _, g in ipairs(gpus) do
        if g.shards <= 0 or (count and (g.shards ~= count or g.mem / g.shards ~= part)) then
            return nil
        end
        count, part = g.shards, g.mem / g.shards
    end
    if not count then
        return nil
    end
    local n = math.max(math.ceil(mem / part), math.ceil(share * count / PPM))
    if n > count then
        return nil
    end
    local tpn = job.tres_per_node
    local other = type(tpn) == "string" and tpn ~= "" and tpn .. "," or ""
    return string.format("%sgres:shard:%d", other, n)
end

-- Why the job cannot run on any GPU of the cluster, or nil.
function M.check(job, gpus)
    local mem, share = M.options(job)
    if not mem then
        return share
    end
    if mem == 0 and share == 0 then
        return nil
    end
    local any, shards = M.gres(job)
    local opt = mem > 0 and "--gpu-mem" or "--gpu-share"
    if not any then
        -- Not turned into shards (options_as_shards): say so when no GPU is large enough.
        if gpus and gpus.options_as_shards and #gpus > 0 then
            local best = 0
            for _, g in ipairs(gpus) do
                best = math.max(best, g.mem)
            end
            if mem > best then
                return string.format("--gpu-mem %s is above the memory of every GPU of the "
                    .. "cluster (at most %s)", M.size(mem), M.size(best))
            end
        end
        return opt .. " needs GPUs or shards (--gres=gpu:N or --gres=shard:N)"
    end
    if not gpus or #gpus == 0 then
        return nil
    end
    -- The most any GPU allows: its memory, or with shards their part of it.
    local best_mem, best_ppm = 0, 0
    for _, g in ipairs(gpus) do
        local m, p = g.mem, PPM
        if shards > 0 then
            if g.shards > 0 then
                local s = math.min(shards, g.shards)
                m = math.floor(g.mem * s / g.shards)
                p = math.floor(s * PPM / g.shards)
            else
                m, p = 0, 0
            end
        end
        best_mem = math.max(best_mem, m)
        best_ppm = math.max(best_ppm, p)
    end
    local whose = shards > 0 and string.format("the part of %d shard%s", shards,
        shards == 1 and "" or "s") or "the memory"
    if share > best_ppm then
        return string.format("--gpu-share %.4g is above %s of every GPU of the cluster (at most %.4g)",
            share / PPM, shards > 0 and whose or "a whole GPU", best_ppm / PPM)
    end
    if mem > best_mem then
        return string.format("--gpu-mem %s is above %s of every GPU of the cluster (at most %s)",
            M.size(mem), whose, M.size(best_mem))
    end
    return nil
end

-- Beside this file.
local function here(name)
    local src = debug.getinfo(1, "S").source
    local dir = string.match(src, "^@(.*)/[^/]*$") or "."
    return dir .. "/" .. name
end

-- The whole-GPU rule for a job's GRES (submitted, or changed by scontrol update): the job's
-- tres_per_node turned into shards, or the reason to refuse it.  A job asking for a whole GPU
-- is refused when tessel_gpus.lua cannot be loaded (the rule would silently be off).
local function whole_gpus(job, gpus, err)
    if #M.gpu_items(job) > 0 and not gpus then
        return string.format("tessel_gpus.lua could not be loaded (%s): whole-GPU jobs are "
            .. "refused until the administrator repairs it", err)
    end
    local shards, why = M.whole_gpu_as_shards(job, gpus)
    if why then
        return why
    end
    if shards then
        slurm.log_info("tessel: a whole GPU as its shards: %s -> %s", job.tres_per_node, shards)
        job.tres_per_node = shards
    end
    return nil
end

local function submit(job)
    local gpus, err = M.load_gpus(here("tessel_gpus.lua"))
    if not gpus then
        -- Without the cluster's view only what needs none is checked here; the nodes check all.
        slurm.log_error("tessel: %s: the GPUs' memory is checked where steps start", err)
    end
    local mem, share = M.options(job)
    local asked = mem and M.options_as_shards(job, gpus, mem, share)
    if asked then
        slurm.log_info("tessel: --gpu-mem/--gpu-share as shards: %s", asked)
        job.tres_per_node = asked
    end
    local why = M.check(job, gpus)
    if why then
        slurm.log_user("tessel: %s: nothing was queued", why)
        return slurm.ERROR
    end
    why = whole_gpus(job, gpus, err)
    if why then
        slurm.log_user("tessel: %s: nothing was queued", why)
        return slurm.ERROR
    end
    return slurm.SUCCESS
end

-- scontrol update of a pending job: its owner may change its GRES (TresPerNode=gres:gpu:1 on
-- a shard job); the same whole-GPU rule applies to the fields it changes.
local function modify(job)
    local gpus, err
    if #M.gpu_items(job) > 0 then
        gpus, err = M.load_gpus(here("tessel_gpus.lua"))
    end
    local why = whole_gpus(job, gpus, err)
    if why then
        slurm.log_user("tessel: %s: the job was not changed", why)
        return slurm.ERROR
    end
    return slurm.SUCCESS
end

if slurm then
    function slurm_job_submit(job_desc, part_list, submit_uid)
        return submit(job_desc)
    end

    function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
        return modify(job_desc)
    end
end

return M
