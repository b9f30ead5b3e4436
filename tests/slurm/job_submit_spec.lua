-- job_submit_spec.lua - unit tests (busted, Lua 5.1 as slurmctld's job_submit/lua runs it) of
-- contrib/slurm/job_submit.lua: the options and GRES it reads from a job, the cluster's GPUs it
-- loads, and what it refuses.  Run by tests/t/t9003-slurm-submit-lua.t.
local src = assert(os.getenv("TESSEL_SRCDIR"), "TESSEL_SRCDIR")
local script = src .. "/contrib/slurm/job_submit.lua"
local M = dofile(script)

local GiB = 1073741824

-- A job as job_submit/lua shows it: spank_job_env is indexed from 0.
local function job(tres, env)
    local j = { tres_per_node = tres }
    if env then
        local e = {}
        for i, kv in ipairs(env) do
            e[i - 1] = kv
        end
        j.spank_job_env = e
    end
    return j
end

-- A private directory for the block, removed after it.
local function tmpdir()
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -m 700 " .. dir) == 0)
    teardown(function()
        os.execute("rm -rf " .. dir)
    end)
    return dir
end

local function write(path, text)
    local f = assert(io.open(path, "w"))
    f:write(text)
    f:close()
end

-- Two nodes: n1 with two 8 GiB GPUs of 4 shards, n2 with one 16 GiB GPU of 4 shards and one
-- GPU without shards.
local cluster = {
    { node = "n1", index = 0, mem = 8 * GiB, shards = 4 },
    { node = "n1", index = 1, mem = 8 * GiB, shards = 4 },
    { node = "n2", index = 0, mem = 16 * GiB, shards = 4 },
    { node = "n2", index = 1, mem = 24 * GiB, shards = 0 },
}

describe("size", function()
    it("writes sizes as the plugin does", function()
        assert.are.equal("512 B", M.size(512))
        assert.are.equal("9.00 GiB", M.size(9 * GiB))
        assert.are.equal("12.5 GiB", M.size(12.5 * GiB))
        assert.are.equal("512 MiB", M.size(512 * 1048576))
    end)
end)

describe("options", function()
    it("reads the numbers spank_tessel.so passed, 0 when absent", function()
        local mem, share = M.options(job("gres:shard:1",
            { "OTHER=1", "TESSEL_GPU_MEM_BYTES=1073741824", "TESSEL_GPU_SHARE_PPM=250000" }))
        assert.are.equal(GiB, mem)
        assert.are.equal(250000, share)
        mem, share = M.options(job("gres:shard:1"))
        assert.are.equal(0, mem)
        assert.are.equal(0, share)
    end)
    it("refuses what the plugin does not write", function()
        for _, bad in ipairs({ "TESSEL_GPU_MEM_BYTES=8G", "TESSEL_GPU_MEM_BYTES=-1",
            "TESSEL_GPU_MEM_BYTES=0", "TESSEL_GPU_SHARE_PPM=1000001", "TESSEL_GPU_SHARE_PPM=" }) do
            local mem, why = M.options(job("gres:gpu:1", { bad }))
            assert.is_nil(mem)
            assert.truthy(string.find(why, "not what spank_tessel.so writes", 1, true), bad)
        end
    end)
end)

describe("gres", function()
    it("finds GPUs and shards per node in Slurm 22.05's tres_per_* forms", function()
        local any, shards = M.gres({ tres_per_node = "gres:shard:2" })
        assert.is_true(any)
        assert.are.equal(2, shards)
        any, shards = M.gres({ tres_per_node = "gres/gpu:tesla:1,gres:shard:3" })
        assert.is_true(any)
        assert.are.equal(3, shards)
        any, shards = M.gres({ tres_per_job = "gres:gpu:2" })
        assert.is_true(any)
        assert.are.equal(0, shards)
        any = M.gres({ tres_per_task = "gres:shard:1" })
        assert.is_true(any)
        any = M.gres({ tres_per_node = "gres:license:1" })
        assert.is_false(any)
        any = M.gres({})
        assert.is_false(any)
    end)
end)

describe("check", function()
    local function why(tres, env, gpus)
        return M.check(job(tres, env), gpus == nil and cluster or gpus)
    end
    it("passes a job without Tessel options", function()
        assert.is_nil(why(nil, nil))
        assert.is_nil(why("gres:shard:1", { "X=1" }))
    end)
    it("refuses --gpu-mem or --gpu-share without a GPU or shard", function()
        assert.are.equal("--gpu-mem needs GPUs or shards (--gres=gpu:N or --gres=shard:N)",
            why(nil, { "TESSEL_GPU_MEM_BYTES=1073741824" }))
        assert.are.equal("--gpu-share needs GPUs or shards (--gres=gpu:N or --gres=shard:N)",
            why("gres:license:1", { "TESSEL_GPU_SHARE_PPM=500000" }, {}))
    end)
    it("holds a whole-GPU job to the largest GPU's memory", function()
        assert.is_nil(why("gres:gpu:1", { "TESSEL_GPU_MEM_BYTES=" .. 24 * GiB }))
        assert.are.equal("--gpu-mem 25.0 GiB is above the memory of every GPU of the cluster "
            .. "(at most 24.0 GiB)", why("gres:gpu:1", { "TESSEL_GPU_MEM_BYTES=" .. 25 * GiB }))
    end)
    it("holds a shard job to its shards' part of the GPU where that part is largest", function()
        -- 2 of 4 shards: 4 GiB on n1, 8 GiB on n2's GPU 0; n2's GPU 1 has no shards.
        assert.is_nil(why("gres:shard:2", { "TESSEL_GPU_MEM_BYTES=" .. 8 * GiB }))
        assert.are.equal("--gpu-mem 9.00 GiB is above the part of 2 shards of every GPU of the "
            .. "cluster (at most 8.00 GiB)", why("gres:shard:2", { "TESSEL_GPU_MEM_BYTES=" .. 9 * GiB }))
        assert.are.equal("--gpu-share 0.3 is above the part of 1 shard of every GPU of the "
            .. "cluster (at most 0.25)", why("gres:shard:1", { "TESSEL_GPU_SHARE_PPM=300000" }))
        -- More shards than a GPU has count as all of them.
        assert.is_nil(why("gres:shard:9", { "TESSEL_GPU_SHARE_PPM=1000000" }))
    end)
    it("refuses a forged option value", function()
        assert.truthy(string.find(why("gres:gpu:1", { "TESSEL_GPU_MEM_BYTES=lots" }),
            "TESSEL_GPU_MEM_BYTES=lots", 1, true))
    end)
    it("without the cluster's GPUs, checks only what needs none", function()
        assert.is_nil(why("gres:gpu:1", { "TESSEL_GPU_MEM_BYTES=" .. 1000 * GiB }, {}))
        assert.truthy(why(nil, { "TESSEL_GPU_MEM_BYTES=1" }, {}))
    end)
end)

describe("whole_gpu_as_shards", function()
    local same = {
        { node = "n1", index = 0, mem = 8 * GiB, shards = 4 },
        { node = "n2", index = 0, mem = 16 * GiB, shards = 4 },
        whole_as_shards = true,
    }
    it("turns one whole GPU per node into all the shards of one GPU", function()
        assert.are.equal("gres:shard:4", M.whole_gpu_as_shards({ tres_per_node = "gres:gpu:1" }, same))
        assert.are.equal("gres/shard:4", M.whole_gpu_as_shards({ tres_per_node = "gres/gpu:1" }, same))
        assert.are.equal("shard:4", M.whole_gpu_as_shards({ tres_per_node = "gpu" }, same))
    end)
    it("keeps the job's other GRES beside the shards", function()
        assert.are.equal("gres:shard:4,gres:tmpdisk:1",
            M.whole_gpu_as_shards({ tres_per_node = "gres:gpu:1,gres:tmpdisk:1" }, same))
        assert.are.equal("gres:license:1,gres:shard:4",
            M.whole_gpu_as_shards({ tres_per_node = "gres:license:1,gres:gpu" }, same))
    end)
    it("leaves jobs without a whole GPU alone", function()
        for _, tpn in ipairs({ "gres:shard:1", "gres:license:1", "gres:tmpdisk:1,gres:shard:2" }) do
            local out, why = M.whole_gpu_as_shards({ tres_per_node = tpn }, same)
            assert.is_nil(out, tpn)
            assert.is_nil(why, tpn)
        end
        assert.is_nil(M.whole_gpu_as_shards({}, same))
    end)
    it("refuses every whole-GPU request it cannot turn into shards, with the reason", function()
        local jobs = {
            { tres_per_node = "gres:gpu:2" },
            { tres_per_node = "gres:gpu:a100:1" },
            { tres_per_node = "gres:gpu:a100" },
            { tres_per_node = "gres:gpu:1,gres:shard:1" },
            { tres_per_node = "gres:gpu:1,gres:gpu:1" },
            { tres_per_node = "gres:gpu:1", tres_per_job = "gres:gpu:1" },
            { tres_per_job = "gres:gpu:1" },    -- --gpus=1
            { tres_per_task = "gres:gpu:1" },   -- --gpus-per-task=1
            { tres_per_socket = "gres:gpu:1" }, -- --gpus-per-socket=1
        }
        for _, j in ipairs(jobs) do
            local out, why = M.whole_gpu_as_shards(j, same)
            local label = tostring(j.tres_per_node) .. "/" .. tostring(j.tres_per_job)
            assert.is_nil(out, label)
            assert.truthy(why and string.find(why, "whole GPUs are given as all the shards", 1, true), label)
        end
    end)
    it("only when tessel_gpus.lua asks for it; unequal or no shards refuse", function()
        local off = { same[1], same[2] }
        assert.is_nil(M.whole_gpu_as_shards({ tres_per_node = "gres:gpu:1" }, off))
        assert.is_nil(M.whole_gpu_as_shards({ tres_per_node = "gres:gpu:1" }, nil))
        local mixed = { same[1], { node = "n3", index = 0, mem = 8 * GiB, shards = 8 }, whole_as_shards = true }
        local out, why = M.whole_gpu_as_shards({ tres_per_node = "gres:gpu:1" }, mixed)
        assert.is_nil(out)
        assert.truthy(string.find(why, "shard counts differ", 1, true))
        local noshards = { { node = "n1", index = 0, mem = 8 * GiB, shards = 0 }, whole_as_shards = true }
        out, why = M.whole_gpu_as_shards({ tres_per_node = "gres:gpu:1" }, noshards)
        assert.is_nil(out)
        assert.truthy(why)
    end)
end)

describe("options_as_shards", function()
    -- 4 shards of 2 GiB on every GPU.
    local fixed = {
        { node = "n1", index = 0, mem = 8 * GiB, shards = 4 },
        { node = "n2", index = 1, mem = 8 * GiB, shards = 4 },
        options_as_shards = true,
    }
    it("asks for the shards that hold --gpu-mem and --gpu-share", function()
        assert.are.equal("gres:shard:2", M.options_as_shards({}, fixed, 3 * GiB, 0))
        assert.are.equal("gres:shard:1", M.options_as_shards({}, fixed, 2 * GiB, 0))
        assert.are.equal("gres:shard:1", M.options_as_shards({}, fixed, 0, 250000))
        assert.are.equal("gres:shard:2", M.options_as_shards({}, fixed, 0, 250001))
        -- "0.25 of a GPU and 5 GiB": the larger of 1 and 3 shards.
        assert.are.equal("gres:shard:3", M.options_as_shards({}, fixed, 5 * GiB, 250000))
        assert.are.equal("gres:license:1,gres:shard:4",
            M.options_as_shards({ tres_per_node = "gres:license:1" }, fixed, 8 * GiB, 0))
    end)
    it("not beyond a GPU, not for jobs with GRES, not without the line or fixed shards", function()
        assert.is_nil(M.options_as_shards({}, fixed, 9 * GiB, 0))
        assert.are.equal("--gpu-mem 9.00 GiB is above the memory of every GPU of the cluster "
            .. "(at most 8.00 GiB)", M.check(job(nil, { "TESSEL_GPU_MEM_BYTES=" .. 9 * GiB }), fixed))
        assert.is_nil(M.options_as_shards({ tres_per_node = "gres:gpu:1" }, fixed, GiB, 0))
        assert.is_nil(M.options_as_shards({}, fixed, 0, 0))
        assert.is_nil(M.options_as_shards({}, { fixed[1], fixed[2] }, GiB, 0))
        local unequal = { fixed[1], { node = "n3", index = 0, mem = 16 * GiB, shards = 4 },
            options_as_shards = true }
        assert.is_nil(M.options_as_shards({}, unequal, GiB, 0))
    end)
end)

describe("load_gpus", function()
    local dir = tmpdir()
    it("reads gpu() lines as tessel slurm-conf prints them", function()
        write(dir .. "/g.lua", 'gpu("n1", 0, 8589934592, 4)\n-- a comment\ngpu("n1", 1, 8589934592, 4)\n')
        local g = assert(M.load_gpus(dir .. "/g.lua"))
        assert.are.equal(2, #g)
        assert.are.same({ node = "n1", index = 1, mem = 8 * GiB, shards = 4 }, g[2])
        assert.is_nil(g.whole_as_shards)
        write(dir .. "/w.lua", 'gpu("n1", 0, 8589934592, 4)\nwhole_gpus_as_shards()\noptions_as_shards()\n')
        g = assert(M.load_gpus(dir .. "/w.lua"))
        assert.is_true(g.whole_as_shards)
        assert.is_true(g.options_as_shards)
    end)
    it("runs the file with nothing but gpu() in reach", function()
        write(dir .. "/os.lua", 'os.execute("touch ' .. dir .. '/ran")\n')
        local g, err = M.load_gpus(dir .. "/os.lua")
        assert.is_nil(g)
        assert.truthy(err)
        assert.is_nil(io.open(dir .. "/ran"))
    end)
    it("refuses precompiled Lua, keeps the strings' methods out of reach, bounds the run", function()
        local bc = assert(io.open(dir .. "/bc.lua", "wb"))
        bc:write(string.dump(function() end))
        bc:close()
        local g, err = M.load_gpus(dir .. "/bc.lua")
        assert.is_nil(g)
        assert.truthy(string.find(err, "precompiled Lua is refused", 1, true))
        -- ("x"):rep(2^31) would ask slurmctld for 2 GiB: no string method is reachable.
        write(dir .. "/rep.lua", 'local s = ("x"):rep(3)\n')
        g, err = M.load_gpus(dir .. "/rep.lua")
        assert.is_nil(g)
        assert.truthy(string.find(err, "rep", 1, true))
        -- The strings' methods are back once it has run.
        assert.are.equal("xx", ("x"):rep(2))
        write(dir .. "/loop.lua", "while true do end\n")
        g, err = M.load_gpus(dir .. "/loop.lua")
        assert.is_nil(g)
        assert.truthy(string.find(err, "runs too long", 1, true))
        assert.are.equal(2, #assert(M.load_gpus(dir .. "/g.lua")))
    end)
    it("refuses a malformed gpu() line, a syntax error and a missing file with the reason", function()
        write(dir .. "/bad.lua", 'gpu("n1", 0, "8G", 4)\n')
        local g, err = M.load_gpus(dir .. "/bad.lua")
        assert.is_nil(g)
        assert.truthy(string.find(err, "gpu(NODE, INDEX, BYTES, SHARDS) expected", 1, true))
        write(dir .. "/syntax.lua", 'gpu("n1", 0,\n')
        g, err = M.load_gpus(dir .. "/syntax.lua")
        assert.is_nil(g)
        assert.truthy(err)
        g, err = M.load_gpus(dir .. "/none.lua")
        assert.is_nil(g)
        assert.truthy(string.find(err, "none.lua", 1, true))
    end)
end)

describe("slurm_job_submit", function()
    local dir = tmpdir()
    teardown(function()
        _G.slurm = nil
    end)
    it("refuses with one line to the user and slurm.ERROR, accepts with slurm.SUCCESS", function()
        local said, logged = {}, {}
        _G.slurm = {
            SUCCESS = 0,
            ERROR = -1,
            log_user = function(fmt, ...) said[#said + 1] = string.format(fmt, ...) end,
            log_error = function(fmt, ...) logged[#logged + 1] = string.format(fmt, ...) end,
        }
        assert(os.execute("cp " .. script .. " " .. dir .. "/job_submit.lua") == 0)
        write(dir .. "/tessel_gpus.lua", 'gpu("n1", 0, 8589934592, 4)\n')
        dofile(dir .. "/job_submit.lua")
        assert.are.equal(-1, slurm_job_submit(job("gres:shard:1",
            { "TESSEL_GPU_MEM_BYTES=" .. 3 * GiB }), {}, 1000))
        assert.are.same({ "tessel: --gpu-mem 3.00 GiB is above the part of 1 shard of every GPU "
            .. "of the cluster (at most 2.00 GiB): nothing was queued" }, said)
        assert.are.equal(0, slurm_job_submit(job("gres:shard:1",
            { "TESSEL_GPU_MEM_BYTES=" .. 2 * GiB }), {}, 1000))
        assert.are.equal(0, #logged)
        -- Without tessel_gpus.lua: said in slurmctld's log, and only what needs no GPU data.
        os.remove(dir .. "/tessel_gpus.lua")
        assert.are.equal(0, slurm_job_submit(job("gres:shard:1",
            { "TESSEL_GPU_MEM_BYTES=" .. 3 * GiB }), {}, 1000))
        assert.are.equal(1, #logged)
        assert.truthy(string.find(logged[1], "tessel_gpus.lua", 1, true))
        assert.are.equal(0, slurm_job_modify(job(nil), nil, {}, 1000))
    end)
    it("refuses a whole-GPU job when tessel_gpus.lua does not load, and applies the rule to "
        .. "scontrol update", function()
        local said = {}
        _G.slurm = {
            SUCCESS = 0,
            ERROR = -1,
            log_user = function(fmt, ...) said[#said + 1] = string.format(fmt, ...) end,
            log_error = function() end,
            log_info = function() end,
        }
        assert(os.execute("cp " .. script .. " " .. dir .. "/job_submit.lua") == 0)
        os.remove(dir .. "/tessel_gpus.lua")
        dofile(dir .. "/job_submit.lua")
        -- No tessel_gpus.lua: whole GPUs are refused (the rule cannot silently be off), shards pass.
        assert.are.equal(-1, slurm_job_submit(job("gres:gpu:1"), {}, 1000))
        assert.truthy(string.find(said[1], "tessel_gpus.lua could not be loaded", 1, true))
        assert.are.equal(0, slurm_job_submit(job("gres:shard:1"), {}, 1000))
        assert.are.equal(-1, slurm_job_modify(job("gres:gpu:1"), nil, {}, 1000))
        write(dir .. "/tessel_gpus.lua", 'gpu("n1", 0, 8589934592, 4)\nwhole_gpus_as_shards()\n')
        -- Submitted: converted, or refused with the reason.
        local j = job("gres:gpu:1")
        assert.are.equal(0, slurm_job_submit(j, {}, 1000))
        assert.are.equal("gres:shard:4", j.tres_per_node)
        said = {}
        assert.are.equal(-1, slurm_job_submit({ tres_per_job = "gres:gpu:1" }, {}, 1000))
        assert.truthy(string.find(said[1], "nothing was queued", 1, true))
        -- scontrol update JobId=N TresPerNode=gres:gpu:1 of a pending shard job: converted too.
        j = job("gres:gpu:1")
        assert.are.equal(0, slurm_job_modify(j, { tres_per_node = "gres:shard:1" }, {}, 1000))
        assert.are.equal("gres:shard:4", j.tres_per_node)
        said = {}
        assert.are.equal(-1, slurm_job_modify(job("gres:gpu:2"), nil, {}, 1000))
        assert.truthy(string.find(said[1], "the job was not changed", 1, true))
        assert.are.equal(0, slurm_job_modify(job(nil), nil, {}, 1000))
    end)
end)
