/* test_line.c - line normalisation: one test per prefix dialect (lines
 * copied from tests' corpus), combinations, ANSI/NUL/UTF-8/length edge
 * cases, and near misses that must stay message text. */
#include "ddx/line.h"

#include "check.h"

#include <stdint.h>
#include <string.h>

#define OUT_CAP (DDX_LINE_MAX + 1)

typedef struct norm {
  char out[OUT_CAP];
  size_t len;
  ddx_line_meta_t m;
} norm_t;

/* Normalises a NUL-terminated line with a fresh meta. */
static void norm(norm_t *r, const char *in) {
  ddx_line_meta_init(&r->m);
  r->len = ddx_line_normalize(in, strlen(in), r->out, sizeof r->out, &r->m);
}

/* The rank a line names (-1: none), for the checks that ask nothing else. */
static int32_t rank_of(const char *in) {
  norm_t r;
  norm(&r, in);
  return r.m.rank;
}

/* The documented ms scale, to state expected timestamps readably. */
static int64_t ts(int64_t y, int64_t mo, int64_t d, int64_t h, int64_t mi, int64_t s, int64_t ms) {
  return (((((y * 12 + mo) * 31 + d) * 24 + h) * 60 + mi) * 60 + s) * 1000 + ms;
}

/* A line that must come out byte for byte, with nothing learnt from it. */
static void check_untouched(const char *in) {
  norm_t r;
  norm(&r, in);
  CHECK_EQ_STR(r.out, in);
  CHECK_EQ_INT(r.len, strlen(in));
  CHECK_EQ_INT(r.m.rank, -1);
  CHECK_EQ_INT(r.m.local_rank, -1);
  CHECK_EQ_STR(r.m.host, "");
  CHECK_EQ_INT(r.m.ts_ms, -1);
  CHECK_EQ_INT(r.m.dialects, 0);
}

static void test_meta_init(void) {
  ddx_line_meta_t m;
  memset(&m, 0x5a, sizeof m);
  ddx_line_meta_init(&m);
  CHECK_EQ_INT(m.rank, -1);
  CHECK_EQ_INT(m.local_rank, -1);
  CHECK_EQ_STR(m.host, "");
  CHECK_EQ_INT(m.ts_ms, -1);
  CHECK_EQ_INT(m.stream, 0);
  CHECK_EQ_INT(m.level, 0);
  CHECK_EQ_INT(m.dialects, 0);
}

static void test_rank(void) {
  norm_t r;
  norm(&r, "[rank6]: Traceback (most recent call last):");
  CHECK_EQ_STR(r.out, "Traceback (most recent call last):");
  CHECK_EQ_INT(r.m.rank, 6);
  CHECK_EQ_INT(r.m.dialects, DDX_DIALECT_RANK);

  /* the traceback's indentation survives */
  norm(&r, "[rank1]:   File \"/home/user/projects/LMCPO_hpc/train_ppo.py\", line 68, in <module>");
  CHECK_EQ_STR(r.out,
               "  File \"/home/user/projects/LMCPO_hpc/train_ppo.py\", line 68, in <module>");
  CHECK_EQ_INT(r.m.rank, 1);

  norm(&r, "[rank14]:");
  CHECK_EQ_STR(r.out, "");
  CHECK_EQ_INT(r.m.rank, 14);

  /* the bracket lost where the paste was cut */
  norm(&r, "rank9]:   File \"/root/foundation-model-stack/fms/modules/attention.py\", line 438, in "
           "__init__");
  CHECK_EQ_STR(r.out, "  File \"/root/foundation-model-stack/fms/modules/attention.py\", line 438, "
                      "in __init__");
  CHECK_EQ_INT(r.m.rank, 9);
}

static void test_rank_glog(void) {
  norm_t r;
  norm(&r, "[rank7]:[E126 01:17:58.183429932 ProcessGroupNCCL.cpp:616] [Rank 7] Watchdog caught "
           "collective operation timeout: WorkNCCL(SeqNum=14217, OpType=ALLGATHER)");
  CHECK_EQ_STR(r.out, "[Rank 7] Watchdog caught collective operation timeout: "
                      "WorkNCCL(SeqNum=14217, OpType=ALLGATHER)");
  CHECK_EQ_INT(r.m.rank, 7);
  CHECK_EQ_INT(r.m.level, 'E');
  /* c10 does not pad the month: E126 is January 26th */
  CHECK_EQ_INT(r.m.ts_ms, ts(0, 1, 26, 1, 17, 58, 183));
  CHECK_EQ_INT(r.m.dialects, DDX_DIALECT_RANK | DDX_DIALECT_GLOG);

  norm(&r, "[rank0]:[W1218 20:27:21.426415540 socket.cpp:12] [c10d] The client socket has failed");
  CHECK_EQ_STR(r.out, "[c10d] The client socket has failed");
  CHECK_EQ_INT(r.m.level, 'W');
  CHECK_EQ_INT(r.m.ts_ms, ts(0, 12, 18, 20, 27, 21, 426));
}

static void test_glog_bare(void) {
  norm_t r;
  norm(&r, "E0801 13:23:20.000000 32974 torch/distributed/elastic/multiprocessing/api.py:874] "
           "failed (exitcode: 1) local_rank: 3 (pid: 33054) of binary: "
           "/home/user/pythonn3.11/bin/python3");
  CHECK_EQ_STR(r.out, "failed (exitcode: 1) local_rank: 3 (pid: 33054) of binary: "
                      "/home/user/pythonn3.11/bin/python3");
  CHECK_EQ_INT(r.m.level, 'E');
  CHECK_EQ_INT(r.m.ts_ms, ts(0, 8, 1, 13, 23, 20, 0));
  CHECK_EQ_INT(r.m.rank, -1);
  CHECK_EQ_INT(r.m.dialects, DDX_DIALECT_GLOG);

  norm(&r, "I1028 12:13:38.405081 632355 ProcessGroupNCCL.cpp:843] [Rank 0] NCCL watchdog thread "
           "started!");
  CHECK_EQ_STR(r.out, "[Rank 0] NCCL watchdog thread started!");
  CHECK_EQ_INT(r.m.level, 'I');
  CHECK_EQ_INT(r.m.rank, 0); /* from the message's own [Rank 0] */

  /* glog pads the thread id */
  norm(&r, "W0527 09:20:36.761000  96484 api.py:857] Sending process 96484 closing signal SIGTERM");
  CHECK_EQ_STR(r.out, "Sending process 96484 closing signal SIGTERM");
}

static void test_glog_old(void) {
  norm_t r;
  norm(&r, "[E ProcessGroupNCCL.cpp:737] [Rank 1] Watchdog caught collective operation timeout: "
           "WorkNCCL(SeqNum=469508, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1802212 "
           "milliseconds before timing out.");
  CHECK_EQ_STR(r.out, "[Rank 1] Watchdog caught collective operation timeout: "
                      "WorkNCCL(SeqNum=469508, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for "
                      "1802212 milliseconds before timing out.");
  CHECK_EQ_INT(r.m.level, 'E');
  CHECK_EQ_INT(r.m.ts_ms, -1);
  CHECK_EQ_INT(r.m.rank, 1);

  norm(&r, "[E socket.cpp:793] [c10d] The client socket has timed out after 60s while trying to "
           "connect to (IP1, 2222).");
  CHECK_EQ_STR(r.out, "[c10d] The client socket has timed out after 60s while trying to connect "
                      "to (IP1, 2222).");
  CHECK_EQ_STR(r.m.host, "");

  norm(&r, "[I ProcessGroupWrapper.cpp:562] [Rank 0] Running collective: "
           "CollectiveFingerPrint(SequenceNumber=1277, OpType=ALLREDUCE)");
  CHECK_EQ_STR(r.out, "[Rank 0] Running collective: CollectiveFingerPrint(SequenceNumber=1277, "
                      "OpType=ALLREDUCE)");
  CHECK_EQ_INT(r.m.level, 'I');
}

static void test_torchrun_tee(void) {
  norm_t r;
  norm(&r, "[default3]:Traceback (most recent call last):");
  CHECK_EQ_STR(r.out, "Traceback (most recent call last):");
  CHECK_EQ_INT(r.m.local_rank, 3);
  CHECK_EQ_INT(r.m.rank, -1);
  CHECK_EQ_INT(r.m.dialects, DDX_DIALECT_TORCHRUN_TEE);

  norm(&r, "[trainer12]:  File \"train.py\", line 3, in <module>");
  CHECK_EQ_STR(r.out, "  File \"train.py\", line 3, in <module>");
  CHECK_EQ_INT(r.m.local_rank, 12);

  norm(&r, "[default0]:[rank0]: RuntimeError: boom");
  CHECK_EQ_STR(r.out, "RuntimeError: boom");
  CHECK_EQ_INT(r.m.local_rank, 0);
  CHECK_EQ_INT(r.m.rank, 0);
}

static void test_pdsh(void) {
  norm_t r;
  norm(&r, "10.1.0.1: 10.1.0.1:     return forward_call(*input, **kwargs)");
  CHECK_EQ_STR(r.out, "    return forward_call(*input, **kwargs)");
  CHECK_EQ_STR(r.m.host, "10.1.0.1");
  CHECK_EQ_INT(r.m.dialects, DDX_DIALECT_PDSH);

  norm(&r, "worker-1: [2024-05-14 10:21:33,412] [INFO] [engine.py:1899:forward] loss scale 1.0");
  CHECK_EQ_STR(r.out, "loss scale 1.0");
  CHECK_EQ_STR(r.m.host, "worker-1");
  CHECK_EQ_INT(r.m.level, 'I');
  CHECK_EQ_INT(r.m.ts_ms, ts(2024, 5, 14, 10, 21, 33, 412));
  CHECK_EQ_INT(r.m.dialects, DDX_DIALECT_PDSH | DDX_DIALECT_DS_ASCTIME);

  norm(&r, "g2001: RuntimeError: NCCL error");
  CHECK_EQ_STR(r.out, "RuntimeError: NCCL error");
  CHECK_EQ_STR(r.m.host, "g2001");

  /* an IP prefix on an empty line */
  norm(&r, "10.1.0.3: ");
  CHECK_EQ_STR(r.out, "");
  CHECK_EQ_STR(r.m.host, "10.1.0.3");

  /* long host names are truncated, not overflowed */
  char line[200], host[DDX_HOST_MAX];
  memset(line, 'a', 100);
  line[50] = '-';
  line[51] = '1';
  memcpy(line + 100, ": text", 7);
  memcpy(host, line, DDX_HOST_MAX - 1);
  host[DDX_HOST_MAX - 1] = '\0';
  norm(&r, line);
  CHECK_EQ_STR(r.out, "text");
  CHECK_EQ_STR(r.m.host, host);
}

static void test_combinations(void) {
  norm_t r;
  norm(&r, "10.0.87.143: 10.0.87.143: [rank1]: RuntimeError: CUDA error: an illegal memory access "
           "was encountered");
  CHECK_EQ_STR(r.out, "RuntimeError: CUDA error: an illegal memory access was encountered");
  CHECK_EQ_STR(r.m.host, "10.0.87.143");
  CHECK_EQ_INT(r.m.rank, 1);
  CHECK_EQ_INT(r.m.dialects, DDX_DIALECT_PDSH | DDX_DIALECT_RANK);

  norm(&r, "> [rank3]: torch.OutOfMemoryError: CUDA out of memory.");
  CHECK_EQ_STR(r.out, "torch.OutOfMemoryError: CUDA out of memory.");
  CHECK_EQ_INT(r.m.rank, 3);
  CHECK_EQ_INT(r.m.dialects, DDX_DIALECT_MARKDOWN | DDX_DIALECT_RANK);

  norm(&r, "[80746] [rank0]:[E321 02:07:08.408271257 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog "
           "caught collective operation timeout: WorkNCCL(SeqNum=1580, OpType=ALLREDUCE)");
  CHECK_EQ_STR(r.out, "[Rank 0] Watchdog caught collective operation timeout: "
                      "WorkNCCL(SeqNum=1580, OpType=ALLREDUCE)");
  CHECK_EQ_INT(r.m.rank, 0);
  CHECK_EQ_INT(r.m.ts_ms, ts(0, 3, 21, 2, 7, 8, 408));
  CHECK_EQ_INT(r.m.dialects, DDX_DIALECT_VIEWER_LINENO | DDX_DIALECT_RANK | DDX_DIALECT_GLOG);

  /* host-like tokens are only believed in the outer layer */
  norm(&r, "[rank0]: worker-1: x");
  CHECK_EQ_STR(r.out, "worker-1: x");
  CHECK_EQ_STR(r.m.host, "");

  /* the outermost fact wins when two prefixes disagree */
  norm(&r, "[2025-03-10T15:07:20Z] ERROR 03-10 08:07:20 [core.py:302] x");
  CHECK_EQ_INT(r.m.ts_ms, ts(2025, 3, 10, 15, 7, 20, 0));
}

static void test_srun(void) {
  norm_t r;
  norm(&r, " 2: Traceback (most recent call last):");
  CHECK_EQ_STR(r.out, "Traceback (most recent call last):");
  CHECK_EQ_INT(r.m.rank, 2);
  CHECK_EQ_INT(r.m.dialects, DDX_DIALECT_SRUN);

  norm(&r, "12:   File \"train.py\", line 3, in <module>");
  CHECK_EQ_STR(r.out, "  File \"train.py\", line 3, in <module>");
  CHECK_EQ_INT(r.m.rank, 12);

  /* srun -l over torchrun: one task per node, so the task id names the
   * node ("srun-task-3"), not the global rank */
  norm(&r, "3: [default1]:RuntimeError: x");
  CHECK_EQ_STR(r.out, "RuntimeError: x");
  CHECK_EQ_INT(r.m.rank, -1);
  CHECK_EQ_INT(r.m.local_rank, 1);
  CHECK_EQ_STR(r.m.host, "srun-task-3");

  /* srun -l over mp.spawn (torch >= 2.3): the process's own [rank27]
   * disagrees with srun's id 3, which then names the node's task */
  norm(&r, "3: [rank27]:[W511 09:45:39.206711248 ProcessGroupNCCL.cpp:4115] x");
  CHECK_EQ_INT(r.m.rank, 27);
  CHECK_EQ_STR(r.m.host, "srun-task-3");
  CHECK(r.m.dialects & DDX_DIALECT_SRUN_NODE);
  /* ... and so does a watchdog's "[Rank 15]" under srun's id 1 */
  norm(&r, "1: [Rank 15] Watchdog caught collective operation timeout");
  CHECK_EQ_INT(r.m.rank, 15);
  CHECK_EQ_STR(r.m.host, "srun-task-1");
  /* srun's id that agrees with the rank the line names is the rank */
  norm(&r, " 5: [rank5]: x");
  CHECK_EQ_INT(r.m.rank, 5);
  CHECK_EQ_STR(r.m.host, "");
  CHECK(!(r.m.dialects & DDX_DIALECT_SRUN_NODE));
}

static void test_mpirun(void) {
  norm_t r;
  norm(&r, "[1,3]<stderr>:Traceback (most recent call last):");
  CHECK_EQ_STR(r.out, "Traceback (most recent call last):");
  CHECK_EQ_INT(r.m.rank, 3);
  CHECK_EQ_INT(r.m.stream, 2);
  CHECK_EQ_INT(r.m.dialects, DDX_DIALECT_MPIRUN);

  norm(&r, "[1,0]<stdout>: loss 1.0");
  CHECK_EQ_STR(r.out, "loss 1.0");
  CHECK_EQ_INT(r.m.rank, 0);
  CHECK_EQ_INT(r.m.stream, 1);
}

static void test_ray(void) {
  norm_t r;
  norm(&r, "(WorkerDict pid=26110) Traceback (most recent call last):");
  CHECK_EQ_STR(r.out, "Traceback (most recent call last):");
  CHECK_EQ_INT(r.m.dialects, DDX_DIALECT_RAY);

  norm(&r, "(EngineCore_DP0 pid=223840) ERROR 10-25 13:08:43 [core.py:708]   File "
           "\"/opt/conda/envs/vllm_env/lib/python3.13/site-packages/vllm/v1/core/"
           "kv_cache_utils.py\", line 699, in check_enough_kv_cache_memory");
  CHECK_EQ_STR(r.out, "  File \"/opt/conda/envs/vllm_env/lib/python3.13/site-packages/vllm/v1/"
                      "core/kv_cache_utils.py\", line 699, in check_enough_kv_cache_memory");
  CHECK_EQ_INT(r.m.level, 'E');
  CHECK_EQ_INT(r.m.ts_ms, ts(0, 10, 25, 13, 8, 43, 0));
  CHECK_EQ_INT(r.m.dialects, DDX_DIALECT_RAY | DDX_DIALECT_GLOG);

  norm(&r, "(VllmWorker TP0 pid=34941) INFO 05-01 10:00:00 [gpu_model_runner.py:1067] Model "
           "loading took 0.2389 GB");
  CHECK_EQ_STR(r.out, "Model loading took 0.2389 GB");
  CHECK_EQ_INT(r.m.level, 'I');

  norm(&r, "(RayWorkerWrapper pid=1234, ip=10.0.0.3) RuntimeError: x [repeated 5x across cluster]");
  CHECK_EQ_STR(r.out, "RuntimeError: x [repeated 5x across cluster]");
  CHECK_EQ_STR(r.m.host, "10.0.0.3");
  CHECK_EQ_INT(r.m.rank, -1);

  /* vLLM's worker names its rank: rank=N, or TPn when no PP/DP is named */
  norm(&r, "(VllmWorker rank=5 pid=3073)   File \"/x/multiproc_executor.py\", line 311, in "
           "worker_main");
  CHECK_EQ_STR(r.out, "  File \"/x/multiproc_executor.py\", line 311, in worker_main");
  CHECK_EQ_INT(r.m.rank, 5);
  CHECK_EQ_INT(rank_of("(VllmWorker TP3 pid=34941) ERROR x"), 3);
  CHECK_EQ_INT(rank_of("(Worker_PP1_TP0 pid=1) ERROR x"), -1);
  CHECK_EQ_INT(rank_of("(EngineCore_DP1 pid=223840) ERROR x"), -1);
  CHECK_EQ_INT(rank_of("(WorkerDict pid=26110, ip=10.0.0.3) x TP3 rank=4"), -1);
}

/* SGLang's scheduler: its own tags after the timestamp, in one bracket */
static void test_sglang(void) {
  norm_t r;
  norm(&r, "[2025-06-23 15:06:59 TP13] world_size=16 rank=13 local_rank=5");
  CHECK_EQ_STR(r.out, "world_size=16 rank=13 local_rank=5");
  CHECK_EQ_INT(r.m.rank, 13);
  CHECK_EQ_INT(r.m.ts_ms, ts(2025, 6, 23, 15, 6, 59, 0));
  /* a DP or PP rank beside it: the TP rank is a rank within its group */
  norm(&r, "[2025-03-19 11:39:39 DP4 TP4] TpModelWorkerClient hit an exception: Traceback");
  CHECK_EQ_STR(r.out, "TpModelWorkerClient hit an exception: Traceback");
  CHECK_EQ_INT(r.m.rank, -1);
  CHECK_EQ_INT(r.m.ts_ms, ts(2025, 3, 19, 11, 39, 39, 0));
  norm(&r, "[2025-02-09 21:23:00] Received sigquit from a child proces.");
  CHECK_EQ_STR(r.out, "Received sigquit from a child proces.");
  CHECK_EQ_INT(r.m.rank, -1);
  /* not tags: a lower-case word, a tag without its number */
  norm(&r, "[2025-02-09 21:23:00 tp1] x");
  CHECK_EQ_INT(r.m.ts_ms, -1);
  norm(&r, "[2025-02-09 21:23:00 TP] x");
  CHECK_EQ_INT(r.m.ts_ms, -1);
}

static void test_ds_asctime(void) {
  norm_t r;
  norm(&r, "[2021-06-02 21:06:31,700] [INFO] [logging.py:60:log_dist] [Rank 0] DeepSpeed info: "
           "version=0.4.0+11e94e6, git-hash=11e94e6, git-branch=master");
  CHECK_EQ_STR(r.out, "[Rank 0] DeepSpeed info: version=0.4.0+11e94e6, git-hash=11e94e6, "
                      "git-branch=master");
  CHECK_EQ_INT(r.m.level, 'I');
  CHECK_EQ_INT(r.m.rank, 0);
  CHECK_EQ_INT(r.m.ts_ms, ts(2021, 6, 2, 21, 6, 31, 700));
  CHECK_EQ_INT(r.m.dialects, DDX_DIALECT_DS_ASCTIME);

  norm(&r, "[2023-06-06 07:59:27,354] [ERROR] [launch.py:434:sigkill_handler] "
           "['/root/anaconda3/envs/lmflow3/bin/python', '-u', 'examples/finetune.py'] exits with "
           "return code = -9");
  CHECK_EQ_STR(r.out, "['/root/anaconda3/envs/lmflow3/bin/python', '-u', 'examples/finetune.py'] "
                      "exits with return code = -9");
  CHECK_EQ_INT(r.m.level, 'E');

  norm(&r, "[2022-07-13 21:06:55,240] [WARNING] [stage3.py:2391:step] 8 pytorch allocator cache "
           "flushes since last step.");
  CHECK_EQ_STR(r.out, "8 pytorch allocator cache flushes since last step.");
  CHECK_EQ_INT(r.m.level, 'W');

  /* [Rank -1] is DeepSpeed's "not initialised": no rank */
  norm(&r, "[2024-03-05 22:00:14,149] [INFO] [logging.py:96:log_dist] [Rank -1] DeepSpeed info: "
           "version=0.13.1");
  CHECK_EQ_STR(r.out, "[Rank -1] DeepSpeed info: version=0.13.1");
  CHECK_EQ_INT(r.m.rank, -1);

  /* pushed right by another rank's interleaved output */
  norm(&r, "    [2023-02-24 02:08:06,001] [INFO] [logging.py:68:log_dist] [Rank 0] DeepSpeed info");
  CHECK_EQ_STR(r.out, "[Rank 0] DeepSpeed info");
  CHECK_EQ_INT(r.m.rank, 0);

  /* timestamps order lines */
  ddx_line_meta_t a, b;
  char out[64];
  const char *l1 = "[2023-06-06 07:59:27,351] [INFO] [launch.py:428:sigkill_handler] x";
  const char *l2 = "[2023-06-06 07:59:27,354] [INFO] [launch.py:428:sigkill_handler] x";
  ddx_line_meta_init(&a);
  ddx_line_meta_init(&b);
  ddx_line_normalize(l1, strlen(l1), out, sizeof out, &a);
  ddx_line_normalize(l2, strlen(l2), out, sizeof out, &b);
  CHECK_EQ_INT(b.ts_ms - a.ts_ms, 3);
}

static void test_axolotl(void) {
  norm_t r;
  norm(&r, "[2025-05-02 12:38:28,058] [WARNING] "
           "[axolotl.utils.config.models.input.hint_lora_8bit:1004] [PID:13] [RANK:1] We "
           "recommend setting `load_in_8bit: true` for LORA finetuning");
  CHECK_EQ_STR(r.out, "We recommend setting `load_in_8bit: true` for LORA finetuning");
  CHECK_EQ_INT(r.m.rank, 1);
  CHECK_EQ_INT(r.m.level, 'W');
  CHECK_EQ_INT(r.m.dialects, DDX_DIALECT_DS_ASCTIME | DDX_DIALECT_PLATFORM);
}

static void test_torch_elastic(void) {
  norm_t r;
  norm(&r, "[2024-05-08 08:47:31,877] torch.distributed.elastic.multiprocessing.api: [ERROR] "
           "failed (exitcode: 1) local_rank: 2 (pid: 5939) of binary: "
           "/home/user/anaconda3/envs/salience_detr/bin/python");
  CHECK_EQ_STR(r.out, "failed (exitcode: 1) local_rank: 2 (pid: 5939) of binary: "
                      "/home/user/anaconda3/envs/salience_detr/bin/python");
  CHECK_EQ_INT(r.m.level, 'E');
  CHECK_EQ_INT(r.m.ts_ms, ts(2024, 5, 8, 8, 47, 31, 877));
  CHECK_EQ_INT(r.m.dialects, DDX_DIALECT_TORCH_ELASTIC);

  norm(&r, "[dlc1mtq58q0821ib-master-0] [2026-03-30 19:24:35,966] "
           "torch.distributed.elastic.multiprocessing.api: [WARNING] Sending process 73 the "
           "closing signal SIGTERM");
  CHECK_EQ_STR(r.out, "Sending process 73 the closing signal SIGTERM");
  CHECK_EQ_STR(r.m.host, "dlc1mtq58q0821ib-master-0");
  CHECK_EQ_INT(r.m.level, 'W');
  CHECK_EQ_INT(r.m.dialects, DDX_DIALECT_PLATFORM | DDX_DIALECT_TORCH_ELASTIC);
}

static void test_iso_buildkite(void) {
  norm_t r;
  norm(&r, "  | [2025-03-10T15:07:20Z] ERROR 03-10 08:07:20 [core.py:302]   File "
           "\"/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core.py\", line 294, in "
           "run_engine_core");
  CHECK_EQ_STR(r.out, "  File \"/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core.py\", "
                      "line 294, in run_engine_core");
  CHECK_EQ_INT(r.m.level, 'E');
  CHECK_EQ_INT(r.m.ts_ms, ts(2025, 3, 10, 15, 7, 20, 0));
  CHECK_EQ_INT(r.m.dialects, DDX_DIALECT_PLATFORM | DDX_DIALECT_ISO_TIME | DDX_DIALECT_GLOG);

  norm(&r, "  |");
  CHECK_EQ_STR(r.out, "");

  norm(&r, "2021-12-08T15:12:02Z INFO     Switching optimizer to DeepSpeedCPUAdam");
  CHECK_EQ_STR(r.out, "Switching optimizer to DeepSpeedCPUAdam");
  CHECK_EQ_INT(r.m.level, 'I');
  CHECK_EQ_INT(r.m.ts_ms, ts(2021, 12, 8, 15, 12, 2, 0));

  /* kubectl --timestamps: nanoseconds and a zone */
  norm(&r, "2024-05-14T10:21:33.123456789+00:00 NCCL WARN x");
  CHECK_EQ_STR(r.out, "NCCL WARN x");
  CHECK_EQ_INT(r.m.ts_ms, ts(2024, 5, 14, 10, 21, 33, 123));
}

static void test_wall_clock(void) {
  norm_t r;
  norm(&r, "2024-11-20 14:37:16 [rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to "
           "allocate 132.00 MiB.");
  CHECK_EQ_STR(r.out, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 132.00 MiB.");
  CHECK_EQ_INT(r.m.rank, 3);
  CHECK_EQ_INT(r.m.ts_ms, ts(2024, 11, 20, 14, 37, 16, 0));
  CHECK_EQ_INT(r.m.dialects, DDX_DIALECT_ISO_TIME | DDX_DIALECT_RANK);

  norm(&r, "2023-07-03 04:20:16 ERROR [__main__] main failed");
  CHECK_EQ_STR(r.out, "[__main__] main failed");
  CHECK_EQ_INT(r.m.level, 'E');

  norm(&r, "[cosmos] 2026-05-14 05:28:06,261 - cosmos - ERROR - Process 1 failed with return "
           "code 1");
  CHECK_EQ_STR(r.out, "Process 1 failed with return code 1");
  CHECK_EQ_INT(r.m.level, 'E');
  CHECK_EQ_INT(r.m.ts_ms, ts(2026, 5, 14, 5, 28, 6, 261));

  /* a logger name without a level right after the time stays */
  norm(&r, "2024-11-20 14:37:16 DEBUG:filelock:Lock 140341412642880 acquired");
  CHECK_EQ_STR(r.out, "DEBUG:filelock:Lock 140341412642880 acquired");
}

static void test_vllm(void) {
  norm_t r;
  norm(&r, "ERROR 04-28 15:55:45 worker_base.py:157]     return executor(*args, **kwargs)");
  CHECK_EQ_STR(r.out, "    return executor(*args, **kwargs)");
  CHECK_EQ_INT(r.m.level, 'E');
  CHECK_EQ_INT(r.m.ts_ms, ts(0, 4, 28, 15, 55, 45, 0));

  norm(&r, "INFO 01-22 14:32:19 llm_engine.py:73] Initializing an LLM engine with config: "
           "model='/tmp/CodeLlama-13b-Instruct-hf'");
  CHECK_EQ_STR(r.out,
               "Initializing an LLM engine with config: model='/tmp/CodeLlama-13b-Instruct-hf'");
  CHECK_EQ_INT(r.m.level, 'I');

  norm(&r, "WARNING 05-01 09:00:01 [config.py:1] x");
  CHECK_EQ_STR(r.out, "x");
  CHECK_EQ_INT(r.m.level, 'W');
}

static void test_viewer_lineno(void) {
  norm_t r;
  norm(&r, "[1803] [rank1]:[E602 11:17:52.557891708 ProcessGroupNCCL.cpp:1743] [PG ID 0 PG GUID "
           "0(default_pg) Rank 1] Received a dump signal");
  CHECK_EQ_STR(r.out, "[PG ID 0 PG GUID 0(default_pg) Rank 1] Received a dump signal");
  CHECK_EQ_INT(r.m.rank, 1);

  norm(&r, "12345 | RuntimeError: x");
  CHECK_EQ_STR(r.out, "RuntimeError: x");
  CHECK_EQ_INT(r.m.dialects, DDX_DIALECT_VIEWER_LINENO);
}

static void test_platform_stderr(void) {
  norm_t r;
  norm(&r, "[stderr]  File \"InnerEyePrivate/ML/runner.py\", line 57, in <module>");
  CHECK_EQ_STR(r.out, "  File \"InnerEyePrivate/ML/runner.py\", line 57, in <module>");
  CHECK_EQ_INT(r.m.stream, 2);
  CHECK_EQ_INT(r.m.dialects, DDX_DIALECT_PLATFORM);

  norm(&r, "[stderr]Traceback (most recent call last):");
  CHECK_EQ_STR(r.out, "Traceback (most recent call last):");

  norm(&r, "stderr: Traceback (most recent call last):");
  CHECK_EQ_STR(r.out, "Traceback (most recent call last):");
  CHECK_EQ_INT(r.m.stream, 2);

  /* FastChat logs stderr at ERROR whatever it is: the level is not kept */
  norm(&r, "2024-01-22 14:32:27 | ERROR | stderr |   File "
           "\"/root/space/conda_envs/t2c12/lib/python3.10/runpy.py\", line 196, in "
           "_run_module_as_main");
  CHECK_EQ_STR(r.out, "  File \"/root/space/conda_envs/t2c12/lib/python3.10/runpy.py\", line 196, "
                      "in _run_module_as_main");
  CHECK_EQ_INT(r.m.stream, 2);
  CHECK_EQ_INT(r.m.level, 0);
  CHECK_EQ_INT(r.m.ts_ms, ts(2024, 1, 22, 14, 32, 27, 0));
  CHECK_EQ_INT(r.m.dialects, DDX_DIALECT_ISO_TIME | DDX_DIALECT_PLATFORM);

  norm(&r, "2024-01-02 03:04:05 | INFO | controller | Register a new worker");
  CHECK_EQ_STR(r.out, "Register a new worker");
  CHECK_EQ_INT(r.m.level, 'I');

  norm(&r, "trainer-1  | RuntimeError: x");
  CHECK_EQ_STR(r.out, "RuntimeError: x");
  CHECK_EQ_STR(r.m.host, "trainer-1");

  norm(&r, "[INFO|configuration_utils.py:458] 2023-10-19 09:48:55,234 >> Configuration saved in "
           "out/config.json");
  CHECK_EQ_STR(r.out, "Configuration saved in out/config.json");
  CHECK_EQ_INT(r.m.level, 'I');
  CHECK_EQ_INT(r.m.ts_ms, ts(2023, 10, 19, 9, 48, 55, 234));
}

static void test_markdown(void) {
  norm_t r;
  norm(&r, "> 2023-03-22 09:32:52 iter 3010: loss nan, time 1019.95ms, mfu 14.12%");
  CHECK_EQ_STR(r.out, "iter 3010: loss nan, time 1019.95ms, mfu 14.12%");
  CHECK_EQ_INT(r.m.dialects, DDX_DIALECT_MARKDOWN | DDX_DIALECT_ISO_TIME);

  norm(&r, "> ");
  CHECK_EQ_STR(r.out, "");
  norm(&r, ">");
  CHECK_EQ_STR(r.out, "");
  norm(&r, "> > RuntimeError: x");
  CHECK_EQ_STR(r.out, "RuntimeError: x");
  norm(&r, "> WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 10401");
  CHECK_EQ_STR(r.out,
               "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 10401");
}

static void test_rank_in_message(void) {
  norm_t r;
  /* stays in the text; names the rank */
  norm(&r, "[Rank 0] step=10, skipped=0, lr=[0.0001], mom=[(0.9, 0.999)]");
  CHECK_EQ_STR(r.out, "[Rank 0] step=10, skipped=0, lr=[0.0001], mom=[(0.9, 0.999)]");
  CHECK_EQ_INT(r.m.rank, 0);
  CHECK_EQ_INT(r.m.dialects, 0);
  /* Lightning's rank_prefixed_message, and trlx's */
  norm(&r, "[rank: 3] torch.OutOfMemoryError: CUDA out of memory.");
  CHECK_EQ_STR(r.out, "[rank: 3] torch.OutOfMemoryError: CUDA out of memory.");
  CHECK_EQ_INT(r.m.rank, 3);
  CHECK_EQ_INT(rank_of("[rank 12] x"), 12);
  CHECK_EQ_INT(rank_of("[RANK 0] Collecting rollouts"), 0);
  CHECK_EQ_INT(rank_of("[rank: x] y"), -1);

  /* a prefix's rank is not overridden, nor is a rank preset by the caller */
  norm(&r, "[rank2]: [Rank 5] Watchdog caught collective operation timeout");
  CHECK_EQ_INT(r.m.rank, 2);
  ddx_line_meta_t m;
  char out[128];
  ddx_line_meta_init(&m);
  m.rank = 4;
  strcpy(m.host, "ctx");
  ddx_line_normalize("[Rank 5] x", 10, out, sizeof out, &m);
  CHECK_EQ_INT(m.rank, 4);
  CHECK_EQ_STR(m.host, "ctx");
  /* but what the line itself says beats the preset */
  ddx_line_normalize("worker-7: [rank6]: x", 20, out, sizeof out, &m);
  CHECK_EQ_INT(m.rank, 6);
  CHECK_EQ_STR(m.host, "worker-7");
  CHECK_EQ_STR(out, "x");
}

static void test_ansi(void) {
  norm_t r;
  norm(&r, "\x1b[36m(WorkerDict pid=26110)\x1b[0m Traceback (most recent call last):");
  CHECK_EQ_STR(r.out, "Traceback (most recent call last):");
  CHECK_EQ_INT(r.m.dialects, DDX_DIALECT_ANSI | DDX_DIALECT_RAY);

  /* the ESC byte lost */
  norm(&r, "[36m(WorkerDict pid=26110)[0m [1;31mRuntimeError[0m: x");
  CHECK_EQ_STR(r.out, "RuntimeError: x");
  CHECK_EQ_INT(r.m.dialects, DDX_DIALECT_ANSI | DDX_DIALECT_RAY);

  /* ESC at the very end, and an unfinished CSI */
  norm(&r, "abc\x1b");
  CHECK_EQ_STR(r.out, "abc");
  norm(&r, "abc\x1b[1;3");
  CHECK_EQ_STR(r.out, "abc");

  /* OSC 8 hyperlink (ST) and window title (BEL) */
  norm(&r, "see \x1b]8;;https://x.org/a\x1b\\the docs\x1b]8;;\x1b\\ now");
  CHECK_EQ_STR(r.out, "see the docs now");
  norm(&r, "\x1b]0;title\x07RuntimeError: x");
  CHECK_EQ_STR(r.out, "RuntimeError: x");

  /* other two- and three-byte escapes */
  norm(&r, "\x1b(B\x1b"
           "7x\x1b"
           "8");
  CHECK_EQ_STR(r.out, "x");

  /* caret notation from cat -v */
  norm(&r, "^[[31mERROR^[[0m x");
  CHECK_EQ_STR(r.out, "ERROR x");

  /* not SGR remnants: kept */
  norm(&r, "x[m y [5] [36 [;m z[12]");
  CHECK_EQ_STR(r.out, "x[m y [5] [36 [;m z[12]");
  CHECK_EQ_INT(r.m.dialects, 0);

  /* the ANSI-only entry point */
  char out[64];
  const char *sgr = "\x1b[1mbold\x1b[0m [0m";
  size_t n = ddx_line_strip_ansi(sgr, strlen(sgr), out, sizeof out);
  CHECK_EQ_INT(n, 5);
  CHECK_EQ_STR(out, "bold ");
  n = ddx_line_strip_ansi("[rank1]: x", 10, out, sizeof out);
  CHECK_EQ_STR(out, "[rank1]: x");
  CHECK_EQ_INT(n, 10);
  n = ddx_line_strip_ansi("abcdef", 6, out, 4);
  CHECK_EQ_INT(n, 3);
  CHECK_EQ_STR(out, "abc");
  out[0] = 'z';
  n = ddx_line_strip_ansi("abc", 3, out, 0);
  CHECK_EQ_INT(n, 0);
  CHECK_EQ_INT(out[0], 'z');
}

static void test_nul_utf8_cr(void) {
  norm_t r;
  char out[64];
  ddx_line_meta_t m;
  static const char with_nul[] = "[rank1]: Run\0time\0Error";
  ddx_line_meta_init(&m);
  size_t n = ddx_line_normalize(with_nul, sizeof with_nul - 1, out, sizeof out, &m);
  CHECK_EQ_STR(out, "RuntimeError");
  CHECK_EQ_INT(n, 12);
  CHECK_EQ_INT(m.rank, 1);

  /* a NUL inside a prefix: the prefix is still seen */
  static const char nul_prefix[] = "[ra\0nk2]: x";
  ddx_line_meta_init(&m);
  ddx_line_normalize(nul_prefix, sizeof nul_prefix - 1, out, sizeof out, &m);
  CHECK_EQ_STR(out, "x");
  CHECK_EQ_INT(m.rank, 2);

  /* invalid UTF-8 passes through byte for byte */
  norm(&r, "[rank2]: caf\xc3 \xff\xfe end \xe2\x96\x88");
  CHECK_EQ_STR(r.out, "caf\xc3 \xff\xfe end \xe2\x96\x88");
  check_untouched("\xff\xfe\xfd");

  /* CRLF leftovers */
  norm(&r, "[rank1]: x\r");
  CHECK_EQ_STR(r.out, "x");
}

static void test_lengths(void) {
  static char big[DDX_LINE_MAX * 2 + 1];
  static char out[DDX_LINE_MAX * 2 + 1];
  ddx_line_meta_t m;

  memset(big, 'a', sizeof big - 1);
  ddx_line_meta_init(&m);
  size_t n = ddx_line_normalize(big, sizeof big - 1, out, sizeof out, &m);
  CHECK_EQ_INT(n, DDX_LINE_MAX);
  CHECK_EQ_INT(strlen(out), DDX_LINE_MAX);

  /* the cap applies before prefixes are stripped */
  memcpy(big, "[rank3]: ", 9);
  ddx_line_meta_init(&m);
  n = ddx_line_normalize(big, sizeof big - 1, out, sizeof out, &m);
  CHECK_EQ_INT(n, DDX_LINE_MAX - 9);
  CHECK_EQ_INT(m.rank, 3);

  /* a small output buffer truncates and terminates */
  char small[8];
  ddx_line_meta_init(&m);
  n = ddx_line_normalize("[rank3]: RuntimeError: x", 24, small, sizeof small, &m);
  CHECK_EQ_INT(n, 7);
  CHECK_EQ_STR(small, "Runtime");
  CHECK_EQ_INT(m.rank, 3);

  ddx_line_meta_init(&m);
  small[0] = 'z';
  n = ddx_line_normalize("[rank3]: x", 10, small, 0, &m);
  CHECK_EQ_INT(n, 0);
  CHECK_EQ_INT(small[0], 'z');
  CHECK_EQ_INT(m.rank, 3);

  /* empty and NULL input */
  check_untouched("");
  ddx_line_meta_init(&m);
  n = ddx_line_normalize(NULL, 0, small, sizeof small, &m);
  CHECK_EQ_INT(n, 0);
  CHECK_EQ_STR(small, "");
}

static void test_near_misses(void) {
  static const char *const lines[] = {
      "RuntimeError: x",
      "  File \"a.py\", line 3, in <module>",
      "Traceback (most recent call last):",
      "ValueError: [1, 2]",
      "NCCL version 2.18.1+cuda12.1",
      "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
      "subprocess.CalledProcessError: Command 'ssh gadi-gpu-v100-0011 hostname' returned 255.",
      "deepspeed.runtime.zero.utils.ZeRORuntimeException: The checkpoint being loaded used a DP",
      "NCCL_ASYNC_ERROR_HANDLING: 1",
      "python3: can't open file '/x/train.py': [Errno 2] No such file or directory",
      "gcc-12: error: unrecognized command-line option",
      "Fp16Matmul2: tuned",
      "nslookup: can't resolve 'dlc1dwuhvtro4c27-master-0': Name does not resolve",
      "ptuning/train.sh: torch.distributed.elastic.multiprocessing.api.SignalException: x",
      "[c10d] The client socket has timed out",
      "[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 65536, reducing to 32768",
      "[Torch] Loading checkpoint from /data/ckpt",
      "[4]:",
      "[1/4] c++ -MMD -MF cpu_adam_impl.o.d",
      "[rollout 128 / 128]: 100%",
      "[losses/total_loss: 1.64 | losses/policy_loss: 0.12]:  16%",
      "[enforce fail at inline_container.cc:471] . PytorchStreamWriter failed",
      " | learning rate: 5.333333E-06 | global batch size:     4 | lm loss: 1.420515E+00 |",
      "   1538                 check=True,",
      "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96",
      ">>> import torch",
      "-> 1539                 env=env)",
      "ERROR something went wrong",
      "WARNING: Logging before InitGoogleLogging() is written to STDERR",
      "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) local_rank: 4",
      "22:42:13-041312 INFO     Training complete, saving",
      "(1, 2) is not a valid shape",
      "terminate called after throwing an instance of 'c10::DistBackendError'",
      "  what():  [PG 3 Rank 5] Process group watchdog thread terminated with exception",
      "fdsui[2023-07-10 04:26:05,876] [INFO] [launch.py:318:sigkill_handler] Killing subprocess",
      "`  traceback : Signal 9 (SIGKILL) received by PID 10398`",
      "  time      : 2024-08-17_13:24:04",
      "Epoch-3: loss 1.0",
      "rank 3 and rank 2 both on CUDA device e2000",
  };
  for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
    check_untouched(lines[i]);

  /* [Rank N] at a message start: text kept, rank noted */
  norm_t r;
  norm(&r, "[Rank 0] step=10");
  CHECK_EQ_STR(r.out, "[Rank 0] step=10");
  CHECK_EQ_INT(r.m.rank, 0);
}

static void test_nccl_tag(void) {
  ddx_line_meta_t m;
  char out[512];
  ddx_line_meta_init(&m);
  size_t n =
      ddx_line_normalize("g2001:34292:39682 [7] NCCL INFO [Service thread] Connection closed", 66,
                         out, sizeof out, &m);
  CHECK_EQ_STR(out, "NCCL INFO [Service thread] Connection closed");
  CHECK_EQ_INT(n, strlen(out));
  CHECK_EQ_STR(m.host, "g2001");
  CHECK_EQ_INT(m.local_rank, 7);
  CHECK_EQ_INT(m.pid, 34292);
  CHECK(m.dialects & DDX_DIALECT_NCCL_TAG);
  const char *l2 = "a100-st-p4d24xlarge-22:183006:183220 [1] misc/socket.cc:518 NCCL WARN Net : "
                   "Call to recv failed : Broken pipe";
  ddx_line_meta_init(&m);
  ddx_line_normalize(l2, strlen(l2), out, sizeof out, &m);
  CHECK_EQ_STR(out, "misc/socket.cc:518 NCCL WARN Net : Call to recv failed : Broken pipe");
  CHECK_EQ_STR(m.host, "a100-st-p4d24xlarge-22");
  CHECK_EQ_INT(m.local_rank, 1);
  /* near misses: a time, a ratio, a host:port */
  const char *near[] = {"12:34:56 [INFO] x", "node1:8080 [x] y", "a:1:2 [x] y"};
  for (size_t i = 0; i < 3; i++) {
    ddx_line_meta_init(&m);
    ddx_line_normalize(near[i], strlen(near[i]), out, sizeof out, &m);
    CHECK(!(m.dialects & DDX_DIALECT_NCCL_TAG));
    CHECK_EQ_INT(m.pid, -1);
  }
}

int main(void) {
  test_meta_init();
  test_rank();
  test_rank_glog();
  test_glog_bare();
  test_glog_old();
  test_torchrun_tee();
  test_pdsh();
  test_combinations();
  test_srun();
  test_mpirun();
  test_ray();
  test_sglang();
  test_ds_asctime();
  test_axolotl();
  test_torch_elastic();
  test_iso_buildkite();
  test_wall_clock();
  test_vllm();
  test_viewer_lineno();
  test_platform_stderr();
  test_markdown();
  test_rank_in_message();
  test_ansi();
  test_nul_utf8_cr();
  test_lengths();
  test_near_misses();
  test_nccl_tag();
  CHECK_DONE();
}
