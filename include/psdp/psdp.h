/*
 * psdp: communication middleware for partially sharded data-parallel training.
 * SPDX-License-Identifier: Apache-2.0
 *
 * This is the only public header. It is C99 and names no C++ type.
 *
 * Conventions (apply to every function below):
 * - Every call returns psdp_status_t: PSDP_SUCCESS (0), PSDP_IN_PROGRESS (1) or a negative error code.
 *   After an error, psdp_get_last_error() returns a message that names the argument, rank or operation
 *   (which of its two stores holds it: see psdp_get_last_error).
 * - Outputs come last and end in "_p". They are written only on success.
 * - Handles are opaque pointers. A handle is valid from the call that creates it until the call that
 *   destroys it; using it afterwards is undefined (psdp detects it where it can and returns
 *   PSDP_ERR_INVALID_USAGE).
 * - Every enum ends in a *_MAX_ENUM member that keeps it 32 bits wide, so that any int a caller passes is a
 *   value of the type and psdp can reject it as an invalid argument.
 * - Extensible structs (psdp_config_t) start with {size, magic, version}: always initialise them with
 *   their INITIALIZER macro, then set the fields you want. Fields left at their initial value are
 *   "unset": psdp fills them from the PSDP_* environment, then from built-in defaults. A library
 *   newer than the caller backfills fields the caller did not know about the same way.
 * - Thread safety: calls on different communicators may run concurrently. Calls on one communicator
 *   must be issued in the same order on every rank; psdp_get_last_error() and psdp_comm_abort() may be
 *   called from any thread.
 */
#ifndef PSDP_PSDP_H_
#define PSDP_PSDP_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define PSDP_API
#elif defined(PSDP_BUILDING_LIBRARY)
#define PSDP_API __attribute__((visibility("default")))
#else
#define PSDP_API
#endif

/* ---------------------------------------------------------------------------------------------------
 * Version
 * ------------------------------------------------------------------------------------------------ */
#define PSDP_VERSION_MAJOR 0
#define PSDP_VERSION_MINOR 2
#define PSDP_VERSION_PATCH 0
#define PSDP_VERSION_CODE_OF(major, minor, patch) ((major)*10000 + (minor)*100 + (patch))
#define PSDP_VERSION_CODE PSDP_VERSION_CODE_OF(PSDP_VERSION_MAJOR, PSDP_VERSION_MINOR, PSDP_VERSION_PATCH)

/* ---------------------------------------------------------------------------------------------------
 * Status codes
 * ------------------------------------------------------------------------------------------------ */
typedef enum psdp_status {
  PSDP_SUCCESS = 0,
  PSDP_IN_PROGRESS = 1,           /* nonblocking operation not complete yet; not an error */
  PSDP_ERR_INVALID_ARGUMENT = -1, /* an argument is wrong (NULL, out of range, unknown enum) */
  PSDP_ERR_INVALID_USAGE = -2,    /* arguments are fine but the call is not allowed now (e.g. use after destroy) */
  PSDP_ERR_SYSTEM = -3,           /* the OS or a library below psdp failed (socket, memory, UCX) */
  PSDP_ERR_INTERNAL = -4,         /* a bug in psdp: please report it with the log */
  PSDP_ERR_REMOTE = -5,           /* a peer failed, disconnected or reported an error; the message names it */
  PSDP_ERR_TIMEOUT = -6,          /* PSDP_TIMEOUT expired; the communicator is failed; the message names what
                                     the call waited for and the ranks that did not answer a liveness probe */
  PSDP_ERR_UNSUPPORTED = -7,      /* valid request that this build or backend does not support */
  PSDP_ERR_MISMATCH = -8,         /* ranks disagree (different collective, count, dtype, job secret...) */
  PSDP_ERR_ABORTED = -9,          /* the communicator was aborted */
  PSDP_STATUS_MAX_ENUM = 0x7fffffff
} psdp_status_t;

/* A static, human-readable name for a status ("invalid argument", ...). Unknown codes give "unknown status". */
PSDP_API const char* psdp_status_string(psdp_status_t status);

/* The version of the library actually loaded, as PSDP_VERSION_CODE (may differ from the header's). */
PSDP_API psdp_status_t psdp_get_version(int* version_p);

/* ---------------------------------------------------------------------------------------------------
 * Handles and value types
 * ------------------------------------------------------------------------------------------------ */
typedef struct psdp_comm* psdp_comm_h;
typedef struct psdp_request* psdp_request_h;

#define PSDP_UNIQUE_ID_BYTES 128
/* Identifies one rendezvous: the root's address and a random 128-bit job secret. Treat it as opaque bytes:
 * copy it to every rank (e.g. broadcast it with your own launcher) and pass it to psdp_comm_init(). */
typedef struct psdp_unique_id {
  char internal[PSDP_UNIQUE_ID_BYTES];
} psdp_unique_id_t;

typedef enum psdp_dtype {
  PSDP_INT8 = 0,
  PSDP_UINT8 = 1,
  PSDP_INT32 = 2,
  PSDP_UINT32 = 3,
  PSDP_INT64 = 4,
  PSDP_UINT64 = 5,
  PSDP_FLOAT16 = 6,
  PSDP_BFLOAT16 = 7,
  PSDP_FLOAT32 = 8,
  PSDP_FLOAT64 = 9,
  PSDP_NUM_DTYPES = 10,
  PSDP_DTYPE_MAX_ENUM = 0x7fffffff
} psdp_dtype_t;

typedef enum psdp_op {
  PSDP_SUM = 0,
  PSDP_PROD = 1,
  PSDP_MIN = 2,
  PSDP_MAX = 3,
  PSDP_AVG = 4,
  PSDP_NUM_OPS = 5,
  PSDP_OP_MAX_ENUM = 0x7fffffff
} psdp_op_t;

typedef enum psdp_log_level {
  PSDP_LOG_UNSET = -1, /* take PSDP_LOG_LEVEL, default "warn" */
  PSDP_LOG_OFF = 0,
  PSDP_LOG_ERROR = 1,
  PSDP_LOG_WARN = 2,
  PSDP_LOG_INFO = 3,
  PSDP_LOG_DEBUG = 4,
  PSDP_LOG_TRACE = 5,
  PSDP_LOG_LEVEL_MAX_ENUM = 0x7fffffff
} psdp_log_level_t;

typedef enum psdp_progress_mode {
  PSDP_PROGRESS_UNSET = -1, /* take PSDP_PROGRESS, default "thread" */
  PSDP_PROGRESS_THREAD = 0, /* a progress thread per communicator, asleep on the transport's event fd when idle */
  PSDP_PROGRESS_CALLER = 1, /* no thread: blocking calls and waits drive progress themselves */
  PSDP_PROGRESS_MAX_ENUM = 0x7fffffff
} psdp_progress_mode_t;

/* Collective algorithm, as NCCL_ALGO. Whatever is chosen, every rank gets a bitwise identical all-reduce
 * result; which algorithm ran can change the floating-point result (PSDP_DETERMINISTIC fixes it). */
typedef enum psdp_algorithm {
  PSDP_ALGORITHM_UNSET = -1, /* take PSDP_ALGORITHM, default "auto" */
  PSDP_ALGORITHM_AUTO = 0,   /* by message size: recursive halving/doubling for small messages; direct or ring
                                for large ones */
  PSDP_ALGORITHM_RING = 1,   /* ring (pipelined) for every collective */
  PSDP_ALGORITHM_RHD = 2,    /* recursive halving/doubling wherever it applies, ring elsewhere */
  PSDP_ALGORITHM_DIRECT = 3, /* direct reads (and writes) of the other ranks' buffers wherever all ranks can
                                reach them (one host: one process, psdp_mem_alloc buffers or CMA), at every
                                size; else as auto */
  PSDP_ALGORITHM_MAX_ENUM = 0x7fffffff
} psdp_algorithm_t;

/* Whether collectives check that every rank made the same call (PSDP_CHECK). */
typedef enum {
  PSDP_CHECK_UNSET = -1,
  PSDP_CHECK_FULL = 0, /* every collective agrees its call (kind, count, dtype, op, root) across ranks in
                          log2(nranks) rounds of small messages alongside its data: a rank whose call differs
                          is named on every rank, and no rank returns success from a mismatched call */
  PSDP_CHECK_OFF = 1,  /* no agreement: a few microseconds less per call, for programs known to call alike;
                          a mismatched call may then fail with a less precise error, time out, or (same sizes,
                          other op or dtype) return wrong data without an error. Barriers still synchronise. */
  PSDP_CHECK_MAX_ENUM = 0x7fffffff
} psdp_check_t;

/* ---------------------------------------------------------------------------------------------------
 * Configuration
 * ------------------------------------------------------------------------------------------------ */
#define PSDP_CONFIG_MAGIC 0x70736470u /* "psdp" */

/* Communicator configuration. Initialise with PSDP_CONFIG_INITIALIZER; every field left unset takes
 * the PSDP_* environment variable named beside it, then the built-in default (psdp-info lists them).
 * Strings are copied during psdp_comm_init(); the caller keeps ownership. */
typedef struct psdp_config {
  size_t size;               /* sizeof(psdp_config_t) as the caller compiled it */
  unsigned int magic;        /* PSDP_CONFIG_MAGIC */
  unsigned int version;      /* PSDP_VERSION_CODE the caller compiled against */
  double timeout_s;          /* PSDP_TIMEOUT: seconds any blocking call may wait; unset: < 0 */
  size_t fragment_bytes;     /* PSDP_FRAGMENT_BYTES: fragment size of pipelined transfers (named chunk_bytes
                                before 0.2, which the plan's chunk_bytes is not); unset: 0 */
  int log_level;             /* PSDP_LOG_LEVEL: a psdp_log_level_t; unset: PSDP_LOG_UNSET */
  const char* log_file;      /* PSDP_LOG_FILE: path, "%r" is replaced by the rank; unset: NULL (stderr) */
  const char* socket_ifname; /* PSDP_SOCKET_IFNAME: interface the bootstrap binds to; unset: NULL */
  const char* port_range;    /* PSDP_PORT_RANGE: "lo-hi" ports the bootstrap root may listen on; unset: NULL */
  int progress_mode;         /* PSDP_PROGRESS: a psdp_progress_mode_t; unset: PSDP_PROGRESS_UNSET */
  int algorithm;             /* PSDP_ALGORITHM: a psdp_algorithm_t; unset: PSDP_ALGORITHM_UNSET */
  int deterministic;         /* PSDP_DETERMINISTIC: 1 fixes the algorithm (ring); 0 lets size decide; unset: -1 */
  const char* topo_file;     /* PSDP_TOPO_FILE: hwloc or NCCL topology XML to map ranks with; unset: NULL (live) */
  const char* host_id;       /* PSDP_HOST_ID: which ranks share a host for the mapper; unset: NULL (hostname) */
  const char* gpu_bus_id;    /* PSDP_GPU_BUS_ID: PCI bus id of this rank's GPU; unset: NULL (CPU-only) */
  int max_in_flight;         /* PSDP_MAX_IN_FLIGHT: operations of one communicator posted and not yet complete
                                at most (a nonblocking call beyond it first waits for the oldest); unset: 0 */
  int split_share;           /* PSDP_SPLIT_SHARE: 1 makes the communicators psdp_comm_split and
                                psdp_comm_split_layout return teams on the parent's transport and progress
                                thread; 0 gives them their own; unset: -1 */
  int check;                 /* PSDP_CHECK: a psdp_check_t, whether every collective first agrees its call
                                (kind, count, dtype, op, root) across ranks; unset: PSDP_CHECK_UNSET */
  const char* algorithms;    /* PSDP_ALGORITHMS: rules choosing each call's algorithm by collective, size and
                                rank count, ahead of the built-in ones (README, "Algorithms"); unset: NULL */
  const char* tuning_file;   /* PSDP_TUNING_FILE: measured rules per interconnect (psdp-tune), applied between
                                PSDP_ALGORITHM's and the built-in ones (README, "Tuning"); "none": no file;
                                unset: NULL (the search path) */
} psdp_config_t;

#define PSDP_CONFIG_INITIALIZER                                                                              \
  {                                                                                                          \
    sizeof(psdp_config_t), PSDP_CONFIG_MAGIC, PSDP_VERSION_CODE, -1.0, 0, PSDP_LOG_UNSET, NULL, NULL, NULL,  \
        PSDP_PROGRESS_UNSET, PSDP_ALGORITHM_UNSET, -1, NULL, NULL, NULL, 0, -1, PSDP_CHECK_UNSET, NULL, NULL \
  }

#define PSDP_PARAM_VALUE_BYTES 256

/* One configuration parameter, resolved: what psdp-info prints. Pointers are static strings. */
typedef struct psdp_param_info {
  const char* name;                   /* e.g. "timeout" */
  const char* env;                    /* e.g. "PSDP_TIMEOUT" */
  const char* type;                   /* e.g. "seconds", "bytes", "string", "enum" */
  const char* default_value;          /* built-in default, as text */
  const char* help;                   /* one sentence */
  const char* source;                 /* where value came from: "config", "env" or "default" */
  char value[PSDP_PARAM_VALUE_BYTES]; /* resolved value, as text */
} psdp_param_info_t;

/* Number of configuration parameters. */
PSDP_API int psdp_param_count(void);

/* Resolves parameter `index` (0 <= index < psdp_param_count()) for `config` (NULL: nothing set by the
 * caller) and the current environment. Errors: invalid argument for a bad index, a malformed config or
 * an environment value that does not parse (the message names the variable). Thread-safe. */
PSDP_API psdp_status_t psdp_param_get(const psdp_config_t* config, int index, psdp_param_info_t* info_p);

/* The algorithm table a communicator made with `config` (NULL: nothing set by the caller) and the current
 * environment would use where no tuning file applies: a comment line on the tuning file (see
 * psdp_algorithm_table_for), then one rule per line, first match wins, in PSDP_ALGORITHMS syntax followed by
 * "# <origin>" (PSDP_ALGORITHMS, PSDP_ALGORITHM or built-in). The built-in rules are those for UCX's default
 * transports under the config's progress mode (a communicator takes those of the lanes it finds; README,
 * "Algorithms"). Writes at most *len bytes of it, NUL included, to buf (buf may be NULL when *len is 0) and
 * sets *len to the bytes the whole text needs. Errors: invalid argument for a NULL len, a malformed config or
 * a rule that does not parse (the message names it); truncated output is not an error: compare *len with
 * what you passed. Thread-safe. */
PSDP_API psdp_status_t psdp_algorithm_table(const psdp_config_t* config, char* buf, size_t* len);

/* The same table where a tuning file applies (PSDP_TUNING_FILE, README "Tuning"): a communicator adds the
 * rules of the file's section that covers its interconnect, between PSDP_ALGORITHM's and the built-in ones
 * (origin "tuning file line <n>").
 * `signature` describes an interconnect as a communicator's info line writes it, e.g.
 * "provider=ucx lanes=cma,sysv hosts=1 ranks-per-host=2", whose lanes also pick the built-in rules; NULL or
 * "": none, and the table has no tuned rules. The first line is a comment: no tuning file; the file and the
 * section that covers `signature` (or why none does); or, without a signature, the file's sections.
 * psdp_algorithm_table's text is this one's for a NULL signature. Errors: as psdp_algorithm_table's; invalid
 * argument naming the line and column of a malformed tuning file or signature; a system error for a tuning
 * file that cannot be read. */
PSDP_API psdp_status_t psdp_algorithm_table_for(const psdp_config_t* config, const char* signature, char* buf,
                                                size_t* len);

/* The collective providers of this build, one per line: name, the memory kinds it serves, how its operations
 * progress, and what it runs. A collective's buffers pick the provider (host memory: PSDP_HOST_COLLECTIVES).
 * Writes and sizes the text as psdp_algorithm_table does. Errors: invalid argument for a NULL len, or a NULL
 * buf with a nonzero *len. Thread-safe. */
PSDP_API psdp_status_t psdp_collective_providers(char* buf, size_t* len);

/* ---------------------------------------------------------------------------------------------------
 * Errors
 * ------------------------------------------------------------------------------------------------ */
/* The message of the last failed call, from one of two stores:
 * - each live communicator's: every failed call that was given that communicator while it was live records
 *   its error there, argument errors included (a collective's misaligned buffer, a bad op), and so do the
 *   request calls of its nonblocking operations while it lives. Any thread may read it with
 *   psdp_get_last_error(comm).
 * - each thread's: every other failed call records its error in the calling thread's store, read with
 *   psdp_get_last_error(NULL) in that thread: calls given NULL, a destroyed communicator or another freed or
 *   invalid handle (so errors of use after destroy land here), psdp_comm_destroy, psdp_get_unique_id,
 *   psdp_comm_init and psdp_comm_init_from_env, and the calls on plans, topologies, registered state (but for
 *   psdp_state_register, which has its communicator) and requests whose communicator is gone.
 * psdp_get_last_error of a handle that is not a live communicator reads the thread's store. A successful call
 * changes neither store. Returns "" when there is no error. The text is copied into storage owned by the
 * calling thread and stays valid until that thread's next psdp_get_last_error call. Thread-safe. */
PSDP_API const char* psdp_get_last_error(psdp_comm_h comm);

/* ---------------------------------------------------------------------------------------------------
 * Communicators
 * ------------------------------------------------------------------------------------------------ */
/* Creates a new rendezvous: binds a listening socket (PSDP_SOCKET_IFNAME, PSDP_PORT_RANGE), starts a
 * root thread in the calling process that serves one psdp_comm_init of all ranks, and draws a random
 * 128-bit job secret. Call it on one process, then copy *id_p to every rank. The root thread exits
 * once the ranks have met, or after PSDP_TIMEOUT. Errors: system (no usable interface, no free port). */
PSDP_API psdp_status_t psdp_get_unique_id(psdp_unique_id_t* id_p);

/* Writes the id as printable text ("psdp1:<host>:<port>:<secret hex>") into buf (at least
 * PSDP_UNIQUE_ID_STRING_BYTES bytes), e.g. to pass it through an environment variable. The text holds the
 * job secret: do not log it. */
#define PSDP_UNIQUE_ID_STRING_BYTES 160
PSDP_API psdp_status_t psdp_unique_id_to_string(const psdp_unique_id_t* id, char* buf, size_t buf_bytes);
PSDP_API psdp_status_t psdp_unique_id_from_string(const char* text, psdp_unique_id_t* id_p);

/* Creates a communicator of `nranks` ranks; this process is `rank`. Collective: blocks until every rank
 * has called it with the same id and nranks, or until the timeout (config or PSDP_TIMEOUT) expires.
 * The id's secret never leaves the process: the root proves it holds it before a rank says anything, and
 * the table of addresses carries a MAC (README "Launchers"). config may be NULL. Errors: invalid argument
 * (nranks < 1, rank outside [0, nranks), id not made by psdp_get_unique_id, malformed config), mismatch
 * (ranks passed different nranks, or the listener at the id's address could not prove it holds the
 * secret: another job's root, or an impostor), timeout (names the ranks that never arrived), remote (a
 * rank that had arrived went away before the others did, naming it: every rank fails at once; rank 0's
 * process, which serves the rendezvous, went away; or a table failed its integrity check, naming where it
 * came from), system. */
PSDP_API psdp_status_t psdp_comm_init(int nranks, const psdp_unique_id_t* id, int rank, const psdp_config_t* config,
                                      psdp_comm_h* comm_p);

/* Like psdp_comm_init, with rank, world size and rendezvous taken from the environment a launcher set.
 * Checked in this order (README "Launchers" has the details):
 *   psdp-run / any launcher: PSDP_RANK, PSDP_WORLD_SIZE, PSDP_ROOT_ADDR (host:port), PSDP_JOB_SECRET (32 hex)
 *   torchrun:  RANK, WORLD_SIZE, MASTER_ADDR (+ PSDP_ROOT_ADDR port or PSDP_PORT_RANGE), TORCHELASTIC_RUN_ID
 *   Open MPI:  OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE, PSDP_ROOT_ADDR
 *   Slurm:     SLURM_PROCID, SLURM_NTASKS, PSDP_ROOT_ADDR, SLURM_JOB_ID
 * Rank 0 serves the rendezvous on PSDP_ROOT_ADDR. Without PSDP_JOB_SECRET the secret is derived from the
 * launcher's job id, which anyone who can read the job id can reproduce: weaker, see README. */
PSDP_API psdp_status_t psdp_comm_init_from_env(const psdp_config_t* config, psdp_comm_h* comm_p);

/* Completes outstanding operations and flushes the transport so that every peer can destroy cleanly.
 * Collective; blocks up to the timeout. Afterwards every call that would talk to the peers or add to the
 * communicator (collectives, point-to-point, psdp_comm_split and psdp_comm_split_layout, psdp_comm_after,
 * psdp_state_register, premul-sum ops, psdp_comm_finalize again) returns PSDP_ERR_INVALID_USAGE saying it is
 * finalized; the local queries psdp_comm_rank, psdp_comm_size, psdp_comm_get_layout, psdp_comm_get_placement
 * and psdp_get_last_error still answer, psdp_comm_abort does nothing, and psdp_comm_destroy frees it. */
PSDP_API psdp_status_t psdp_comm_finalize(psdp_comm_h comm);

/* Frees every resource of the communicator (threads, endpoints, memory). Local: does not wait for peers.
 * Call psdp_comm_finalize first for a clean shutdown. The handle is invalid afterwards. */
PSDP_API psdp_status_t psdp_comm_destroy(psdp_comm_h comm);

/* Fails the communicator now, for a caller that gives up on it (a watchdog, a signal, an error elsewhere):
 * every pending or blocked operation of comm completes with PSDP_ERR_ABORTED, every later call on it that
 * would talk to the peers (those psdp_comm_finalize lists, finalize itself included) returns PSDP_ERR_ABORTED
 * while the local queries and premul-sum ops still answer, and the peers are told, so that their operations fail with
 * PSDP_ERR_REMOTE naming this rank instead of waiting for their timeout. Local and non-blocking (it waits
 * at most ~0.1 s for the notices to leave). Safe from any thread, also while another thread is blocked in
 * a call on comm (psdp_comm_finalize too); not concurrently with psdp_comm_destroy of comm. Calling it again is
 * harmless. */
PSDP_API psdp_status_t psdp_comm_abort(psdp_comm_h comm);

PSDP_API psdp_status_t psdp_comm_rank(psdp_comm_h comm, int* rank_p);
PSDP_API psdp_status_t psdp_comm_size(psdp_comm_h comm, int* size_p);

/* The signature of comm's interconnect, as a tuning file's sections are matched against it (README,
 * "Tuning"): "provider=ucx lanes=cma,sysv hosts=1 ranks-per-host=2", the lanes being the union of the UCX
 * transports every rank uses to reach the others ("*" for ranks per host where hosts differ in it). What a
 * tuner writes above the rules it measured. Collective: every rank calls it and gets the same text (two small
 * all-gathers). Writes and sizes the text as psdp_algorithm_table does. Errors: invalid argument for a NULL
 * len, or a NULL buf with a nonzero *len; those of a collective. */
PSDP_API psdp_status_t psdp_comm_interconnect(psdp_comm_h comm, char* buf, size_t* len);

/* ---------------------------------------------------------------------------------------------------
 * Collectives on host memory
 *
 * All ranks call the same collectives with the same count, dtype, op and root, in the same order. psdp checks
 * this on every call: each rank's call is compared with every other rank's (a few small messages alongside
 * the data), so a call that differs anywhere (another collective, count, dtype, op or root, or a call that
 * one rank skipped) fails with PSDP_ERR_MISMATCH on every rank, the message naming two ranks that disagree
 * and what each called, and the communicator is then failed. No rank returns success from such a call. As
 * a consequence every call, count 0 included, completes only once every rank has made it. The buffers' memory
 * kind picks the collective provider that runs the call (psdp-info --providers): `stream` NULL means host
 * memory (provider PSDP_HOST_COLLECTIVES); a stream means CUDA memory, which no provider of this build
 * serves yet (unsupported, naming the call).
 * Blocking (request_p == NULL): returns once this rank's result is in recvbuf, or at the timeout.
 * Nonblocking (request_p != NULL): returns at once with a request; the operation progresses in the
 * background (PSDP_PROGRESS=thread) or inside psdp_request_test/wait (PSDP_PROGRESS=caller). Buffers must
 * stay untouched until the request completes. Up to PSDP_MAX_IN_FLIGHT operations (default 64) of one
 * communicator may be incomplete at once; a call beyond that first waits for the oldest to complete (driving
 * progress itself under PSDP_PROGRESS=caller; a timeout error if it does not within PSDP_TIMEOUT). Up to 8 of
 * them run at once, the others start in posting order as running ones complete, and they complete in any
 * order (wait for them in any order). After the first calls, a collective allocates no memory. One thread at a time may
 * post on a communicator (the ranks must agree on the order of collectives anyway). The communicator's timeout
 * (PSDP_TIMEOUT) bounds each operation from the moment it starts, not from its post. In-place, as in NCCL:
 * reduce-scatter with recvbuf == sendbuf + rank*recvcount, all-gather with sendbuf == recvbuf + rank*sendcount,
 * all-reduce and broadcast with sendbuf == recvbuf. Any other overlap of sendbuf and recvbuf is an invalid argument.
 * Alignment: sendbuf and recvbuf must be aligned to their element size (2 bytes for float16, 4 for
 * float32, ...), as the compiler aligns an array of that type; a misaligned one is an invalid argument naming
 * it ("sendbuf 0x...c01 is not aligned to the 4-byte float32 element"). NULL is allowed only with count 0.
 * Dtypes: all of psdp_dtype_t. Ops: sum, prod, min, max, avg, and premul-sum ops made by
 * psdp_op_create_premul_sum. float16 and bfloat16 reduce in float32 within each step and round once. An op
 * value that is neither built in nor one this process's psdp_op_create_premul_sum has handed out is an
 * invalid argument "unknown op N" (PSDP_NUM_OPS too, until a premul-sum op takes that value); a premul-sum op
 * that was destroyed, made on another communicator or for another dtype is an invalid argument saying so.
 * Errors: invalid argument (names the argument), unsupported, timeout, remote (a peer failed), mismatch.
 * ------------------------------------------------------------------------------------------------ */

/* sendbuf holds nranks*recvcount elements; recvbuf receives the reduction of block `rank`. */
PSDP_API psdp_status_t psdp_reduce_scatter(const void* sendbuf, void* recvbuf, size_t recvcount, psdp_dtype_t dtype,
                                           psdp_op_t op, psdp_comm_h comm, void* stream, psdp_request_h* request_p);

/* sendbuf holds sendcount elements; recvbuf receives nranks*sendcount, rank r's at offset r*sendcount. */
PSDP_API psdp_status_t psdp_all_gather(const void* sendbuf, void* recvbuf, size_t sendcount, psdp_dtype_t dtype,
                                       psdp_comm_h comm, void* stream, psdp_request_h* request_p);

/* sendbuf and recvbuf hold count elements each; any count, it need not divide by nranks. */
PSDP_API psdp_status_t psdp_all_reduce(const void* sendbuf, void* recvbuf, size_t count, psdp_dtype_t dtype,
                                       psdp_op_t op, psdp_comm_h comm, void* stream, psdp_request_h* request_p);

/* Root's sendbuf (count elements) lands in every rank's recvbuf. sendbuf is read on the root only (it may be
 * NULL elsewhere). A root outside [0, nranks) is an invalid argument naming root. */
PSDP_API psdp_status_t psdp_broadcast(const void* sendbuf, void* recvbuf, size_t count, psdp_dtype_t dtype, int root,
                                      psdp_comm_h comm, void* stream, psdp_request_h* request_p);

/* Host memory that the other ranks of the host can map: psdp_mem_alloc, as ncclMemAlloc. On one host,
 * collectives above the small-message size run the direct algorithm (README "Direct collectives"): each rank
 * reduces or copies its share straight out of the other ranks' buffers. It reads other processes' private
 * buffers with CMA where the kernel allows it; buffers from psdp_mem_alloc it maps and reads in place, which
 * is faster for reductions and needs no CMA permission, and an all-reduce on them also writes its share of
 * the result straight into every rank's output. Buffers of psdp_mem_alloc are ordinary host memory for the
 * caller: readable and writable by any code, usable with any communicator or none.
 * Each buffer is a separate shared-memory file mapped into this process (memfd), at least `bytes` long,
 * page aligned, with every page allocated and zeroed before the call returns (so no operation pays the
 * first touch of its pages). Other ranks map it through /proc/<pid>/fd, which the kernel allows where it
 * allows process_vm_readv (the same user; no ptrace restriction): where it does not, a direct collective
 * fails with PSDP_ERR_SYSTEM naming the buffer and the rank, and PSDP_ALGORITHM=ring avoids it. A peer keeps
 * a buffer mapped after its owner frees it, until it has mapped 64 newer ones (4 per rank where that is
 * more) or its communicator is destroyed: memory returns to the system then.
 * Thread-safe. Errors: invalid argument (ptr_p NULL, bytes 0; free: ptr not from psdp_mem_alloc or
 * already freed), system (out of memory or file descriptors). psdp_mem_free(NULL) does nothing. */
PSDP_API psdp_status_t psdp_mem_alloc(void** ptr_p, size_t bytes);
PSDP_API psdp_status_t psdp_mem_free(void* ptr);

/* Completes once every rank has entered it. */
PSDP_API psdp_status_t psdp_barrier(psdp_comm_h comm, psdp_request_h* request_p);

/* ---------------------------------------------------------------------------------------------------
 * More collectives, with the rules above (same order on every rank, checked; nonblocking with request_p;
 * host memory; the same argument checks and errors). The buffers a rank does not use may be NULL there.
 * Algorithms (psdp-info --algorithms names the rules whose fragment and depth they take):
 *   reduce: on one host, where the reduce-scatter rule says direct, the root reads every rank's input and
 *           reduces it into recvbuf in one pass (as the direct reduce-scatter, README "Direct collectives");
 *           otherwise a pipelined chain around the ring ending at the root, each link carrying the data once,
 *           the reduce-scatter rule's fragment and depth;
 *   gather, scatter, all-to-all: on one host, where the all-gather rule says direct, each rank (the gather's
 *           root) copies the blocks it receives straight out of the other ranks' buffers; otherwise one message
 *           per pair of ranks straight between the buffers, the all-gather rule's depth of them in flight per
 *           direction;
 *   all-gather-v, reduce-scatter-v: the ring over blocks of the per-rank counts (the all-gather and
 *           reduce-scatter rules), so their bandwidth is that of the even forms.
 * The -v collectives never run the direct algorithm.
 * ------------------------------------------------------------------------------------------------ */

/* The reduction of every rank's sendbuf (count elements) lands in the root's recvbuf; recvbuf is written on the
 * root only (it may be NULL elsewhere). In place: sendbuf == recvbuf on the root. Every op of the reductions. */
PSDP_API psdp_status_t psdp_reduce(const void* sendbuf, void* recvbuf, size_t count, psdp_dtype_t dtype, psdp_op_t op,
                                   int root, psdp_comm_h comm, void* stream, psdp_request_h* request_p);

/* sendbuf holds sendcount elements; the root's recvbuf receives nranks*sendcount, rank r's at offset
 * r*sendcount (recvbuf is written on the root only; in place: sendbuf == recvbuf + root*sendcount there). */
PSDP_API psdp_status_t psdp_gather(const void* sendbuf, void* recvbuf, size_t sendcount, psdp_dtype_t dtype, int root,
                                   psdp_comm_h comm, void* stream, psdp_request_h* request_p);

/* The root's sendbuf holds nranks*recvcount elements; block r lands in rank r's recvbuf (recvcount elements).
 * sendbuf is read on the root only. In place: recvbuf == sendbuf + root*recvcount on the root. */
PSDP_API psdp_status_t psdp_scatter(const void* sendbuf, void* recvbuf, size_t recvcount, psdp_dtype_t dtype, int root,
                                    psdp_comm_h comm, void* stream, psdp_request_h* request_p);

/* sendbuf and recvbuf hold nranks*count elements: block r of sendbuf goes to rank r, block r of recvbuf
 * comes from rank r. Not in place: the buffers must not overlap. */
PSDP_API psdp_status_t psdp_all_to_all(const void* sendbuf, void* recvbuf, size_t count, psdp_dtype_t dtype,
                                       psdp_comm_h comm, void* stream, psdp_request_h* request_p);

/* All-gather with per-rank counts: recvcounts holds nranks entries, the same on every rank (checked: a rank
 * passing other counts gets PSDP_ERR_MISMATCH, as for any other difference). sendbuf holds recvcounts[rank]
 * elements; recvbuf receives their sum, rank r's block at offset recvcounts[0] + ... + recvcounts[r-1]. In place:
 * sendbuf == recvbuf + that offset for this rank. recvcounts is read during the call only. Counts may be 0. */
PSDP_API psdp_status_t psdp_all_gather_v(const void* sendbuf, void* recvbuf, const size_t* recvcounts,
                                         psdp_dtype_t dtype, psdp_comm_h comm, void* stream, psdp_request_h* request_p);

/* Reduce-scatter with per-rank counts (recvcounts as for psdp_all_gather_v): sendbuf holds their sum; recvbuf
 * receives recvcounts[rank] elements, the reduction of this rank's block. In place: recvbuf == sendbuf + the
 * sum of recvcounts before this rank. */
PSDP_API psdp_status_t psdp_reduce_scatter_v(const void* sendbuf, void* recvbuf, const size_t* recvcounts,
                                             psdp_dtype_t dtype, psdp_op_t op, psdp_comm_h comm, void* stream,
                                             psdp_request_h* request_p);

/* ---------------------------------------------------------------------------------------------------
 * Point-to-point. The n-th psdp_send from rank a to rank b is matched by the n-th psdp_recv on b from a, whatever
 * else either rank posts in between (collectives, or messages to and from other ranks): only the two ranks
 * take part and the other ranks need not call anything. count and dtype must give the same bytes at both
 * ends: a receive of another size fails with PSDP_ERR_MISMATCH on the receiver, which fails the communicator
 * as any error does (the sender is told, as all members are). Messages go straight between the two buffers.
 * Nonblocking with request_p, as the collectives; a blocking send returns once the message has left sendbuf
 * (which may be before the receiver has it), a blocking recv once it is in recvbuf. peer may be this rank for
 * nonblocking calls only (post both halves, then wait); a blocking call to itself is an invalid argument.
 * Errors: invalid argument (peer outside [0, nranks), buffers as above), timeout, remote, mismatch.
 * ------------------------------------------------------------------------------------------------ */

/* Sends count elements of sendbuf to rank `peer`, to be matched by its psdp_recv. */
PSDP_API psdp_status_t psdp_send(const void* sendbuf, size_t count, psdp_dtype_t dtype, int peer, psdp_comm_h comm,
                                 void* stream, psdp_request_h* request_p);

/* Receives count elements from rank `peer` into recvbuf. */
PSDP_API psdp_status_t psdp_recv(void* recvbuf, size_t count, psdp_dtype_t dtype, int peer, psdp_comm_h comm,
                                 void* stream, psdp_request_h* request_p);

/* ---------------------------------------------------------------------------------------------------
 * Requests of nonblocking collectives
 *
 * Thread-safe: any thread may test or wait on any request. A freed request (or a pointer that never was
 * one) is refused with PSDP_ERR_INVALID_USAGE, never dereferenced; NULL is an invalid argument.
 * Destroying a communicator completes its pending requests with PSDP_ERR_INVALID_USAGE; they must still be
 * freed. Errors are recorded as the last error of the request's communicator (while it lives).
 * ------------------------------------------------------------------------------------------------ */

/* Orders comm after a request, as cudaStreamWaitEvent orders a stream after an event: the operations posted
 * on comm after this call start only once `request` has completed. It chains nonblocking collectives of
 * different communicators without waiting in between, e.g. per chunk of sharded state: a reduce-scatter in
 * the shard group (request rs), psdp_comm_after(replica_comm, rs), an all-reduce of its output in the replica
 * group (ar), psdp_comm_after(shard_comm, ar), an all-gather of the reduced pieces. Nonblocking.
 * `request`: pending or complete, of comm or of a communicator sharing comm's transport (split from the same
 * communicator with PSDP_SPLIT_SHARE=1, the default); it stays the caller's to free. Local: the ranks need
 * not make the same calls. If `request` fails, comm fails with its error (comm's members are told, so the
 * failure reaches every rank's operations chained behind it). Counts toward comm's PSDP_MAX_IN_FLIGHT until
 * `request` completes. Errors: invalid argument (comm or request NULL, a request of a communicator on
 * another transport), invalid usage (a freed request, comm finalized), comm's recorded error. */
PSDP_API psdp_status_t psdp_comm_after(psdp_comm_h comm, psdp_request_h request);

/* PSDP_SUCCESS once complete, PSDP_IN_PROGRESS while not, or the operation's error. Never blocks (with
 * PSDP_PROGRESS=caller it advances the communicator's operations for a few microseconds). */
PSDP_API psdp_status_t psdp_request_test(psdp_request_h request);

/* Blocks until complete or until the communicator's timeout (PSDP_TIMEOUT), which fails the communicator.
 * Returns the operation's status. */
PSDP_API psdp_status_t psdp_request_wait(psdp_request_h request);

/* Like psdp_request_wait, but gives up after timeout_s seconds (>= 0, else invalid argument) with
 * PSDP_IN_PROGRESS; the request stays valid and the communicator unharmed (the communicator's own timeout
 * still applies). */
PSDP_API psdp_status_t psdp_request_wait_timeout(psdp_request_h request, double timeout_s);

/* Waits for all `count` requests (of any communicators), each until complete or its communicator's timeout
 * fails it, as one wait: with psdp's progress thread (PSDP_PROGRESS=thread) a psdp_request_wait per request
 * hands the driving of progress back to that thread at each return, and takes it again at the next call (two
 * thread switches per request); this keeps it in the calling thread until the last request completes.
 * Returns PSDP_SUCCESS when all succeeded, else the status of the first (by index) that failed; each one's
 * own status is then psdp_request_test's. The requests stay the caller's to free. Errors, before any wait:
 * invalid argument (requests NULL with count > 0, an element NULL, naming its index), invalid usage (a freed
 * request, naming its index). */
PSDP_API psdp_status_t psdp_request_wait_all(psdp_request_h* requests, size_t count);

/* Releases a completed request. Freeing a pending request, or freeing twice, is invalid usage. */
PSDP_API psdp_status_t psdp_request_free(psdp_request_h request);

/* ---------------------------------------------------------------------------------------------------
 * Reduction ops with a scalar, and communicator split
 * ------------------------------------------------------------------------------------------------ */

/* Creates an op that multiplies every input by *scalar (of `dtype`, read now, in host memory) before
 * summing, as ncclRedOpCreatePreMulSum. The op is valid for collectives on `comm` with that dtype until
 * psdp_op_destroy. Local (not collective). */
PSDP_API psdp_status_t psdp_op_create_premul_sum(psdp_comm_h comm, const void* scalar, psdp_dtype_t dtype,
                                                 psdp_op_t* op_p);
PSDP_API psdp_status_t psdp_op_destroy(psdp_comm_h comm, psdp_op_t op);

#define PSDP_SPLIT_NOCOLOR (-1)

/* Collective over `comm`: ranks with the same color form a new communicator, ordered by key (then by rank
 * in comm), as MPI_Comm_split and ncclCommSplit. color PSDP_SPLIT_NOCOLOR: *newcomm_p is set to NULL.
 * config NULL: the new communicator inherits comm's configuration. The new communicator is independent:
 * it may be used concurrently with comm from another thread, and destroyed in any order. It shares comm's
 * transport and progress thread (config split_share, PSDP_SPLIT_SHARE, default 1), so a process gains no
 * thread, UCX worker or endpoint by it; with split_share = 0 on any rank every new communicator of the call
 * gets its own. Either way a failure stays with the communicators it concerns: a rank that dies fails
 * those that contain it, psdp_comm_abort fails only the communicator it is given (its members are told),
 * and the others go on. */
PSDP_API psdp_status_t psdp_comm_split(psdp_comm_h comm, int color, int key, const psdp_config_t* config,
                                       psdp_comm_h* newcomm_p);

/* Collective over `comm`: the two teams of the rank layout for shard groups of group_size (the layout
 * psdp_comm_get_layout(comm, group_size, ...) returns; "Shard plans" below). *shard_comm_p receives this
 * rank's shard group, in which member g of shard group k is rank g, and *replica_comm_p its replica group, in
 * which replica k is rank k: the same communicators as the two psdp_comm_split calls that section describes,
 * made in one call. config NULL: both inherit comm's configuration. Both are independent of comm and of each
 * other, as psdp_comm_split's. Errors: invalid argument (group_size < 1 or not dividing comm's size, an output
 * NULL; decided alike on every rank before any message), and those of psdp_comm_split; neither output is
 * written on error. */
PSDP_API psdp_status_t psdp_comm_split_layout(psdp_comm_h comm, int group_size, const psdp_config_t* config,
                                              psdp_comm_h* shard_comm_p, psdp_comm_h* replica_comm_p);

/* ---------------------------------------------------------------------------------------------------
 * Topology and rank mapping
 *
 * psdp reads a machine's topology with hwloc (the live machine) or from a file in UTF-8: an hwloc 2 XML
 * export (lstopo topo.xml) or an NCCL topology file (NCCL_TOPO_FILE format). It classifies the path between two
 * devices in NCCL's vocabulary and maps ranks onto hosts: shard groups inside a host when G divides the
 * ranks per host, ring neighbours that share the closest ancestor, a NIC per rank (the closest, spread so
 * no NIC is shared while an equally close one idles), and a NUMA node per rank. A communicator runs the
 * same mapper at init over what every rank reports (its host: the hostname unless PSDP_HOST_ID is set; its
 * GPU: PSDP_GPU_BUS_ID; its NUMA node and NICs); psdp_comm_get_layout gives the result.
 *
 * Thread safety: a topology is immutable once loaded; any thread may query it. Strings it returns stay
 * valid until psdp_topology_free. Errors are recorded as the last error of the calling thread
 * (psdp_get_last_error(NULL)); a NULL topology is an invalid argument, a freed one invalid usage.
 * ------------------------------------------------------------------------------------------------ */
typedef struct psdp_topology* psdp_topology_h;

/* How two devices reach each other, best first (the order of `nvidia-smi topo -m`). */
typedef enum psdp_path_class {
  PSDP_PATH_LOC = 0,  /* the same device */
  PSDP_PATH_NVL = 1,  /* NVLink, directly or through NVSwitches */
  PSDP_PATH_PIX = 2,  /* one PCIe switch */
  PSDP_PATH_PXB = 3,  /* several PCIe switches, without crossing the CPU */
  PSDP_PATH_PHB = 4,  /* through the CPU's PCIe host bridge */
  PSDP_PATH_NODE = 5, /* between host bridges of one NUMA node */
  PSDP_PATH_SYS = 6,  /* across NUMA nodes or sockets */
  PSDP_PATH_CLASS_MAX_ENUM = 0x7fffffff
} psdp_path_class_t;

/* "LOC", "NVL", "PIX", "PXB", "PHB", "NODE", "SYS"; "unknown" otherwise. */
PSDP_API const char* psdp_path_class_string(psdp_path_class_t path);

typedef enum psdp_device_kind {
  PSDP_DEVICE_GPU = 0,
  PSDP_DEVICE_NIC = 1,
  PSDP_DEVICE_KIND_MAX_ENUM = 0x7fffffff
} psdp_device_kind_t;

typedef struct psdp_device_info {
  const char* name;    /* cuda0, nvml3, rsmi1, mlx5_0, hsi0, eth0 */
  const char* bus_id;  /* "dddd:bb:dd.f"; "" when the device has no PCI function in the file */
  int numa_node;       /* os index of the closest NUMA node; -1 when unknown */
  int fabric;          /* NICs: 1 for an RDMA or HPC fabric port, 0 for plain Ethernet; GPUs: 0 */
  uint64_t speed_mbps; /* NICs from NCCL files; 0 when unknown */
} psdp_device_info_t;

typedef struct psdp_topology_summary {
  const char* origin; /* the file name, or "live machine" */
  const char* format; /* "live", "hwloc-xml" or "nccl-xml" */
  int packages;
  int numa_nodes;
  int cores;
  int gpus;
  int nics;
} psdp_topology_summary_t;

/* Loads a topology: path NULL loads PSDP_TOPO_FILE when set and not empty, else discovers the live machine
 * (a machine without GPUs or NICs is not an error: it has none). The format is told by the document's root
 * element. Errors: system (unreadable file, hwloc failure), invalid argument (an empty path, not XML, an
 * unknown root element such as an NCCL graph file, a malformed file; the message names the file). */
PSDP_API psdp_status_t psdp_topology_load(const char* path, psdp_topology_h* topo_p);
PSDP_API psdp_status_t psdp_topology_free(psdp_topology_h topo);
PSDP_API psdp_status_t psdp_topology_get_summary(psdp_topology_h topo, psdp_topology_summary_t* summary_p);
PSDP_API psdp_status_t psdp_topology_device_count(psdp_topology_h topo, psdp_device_kind_t kind, int* count_p);
/* Device `index` in [0, count) of `kind`: GPUs and NICs each in the topology's order. */
PSDP_API psdp_status_t psdp_topology_get_device(psdp_topology_h topo, psdp_device_kind_t kind, int index,
                                                psdp_device_info_t* info_p);
/* The path class between device a (of kind_a) and device b (of kind_b); symmetric, LOC for a device and
 * itself. */
PSDP_API psdp_status_t psdp_topology_path(psdp_topology_h topo, psdp_device_kind_t kind_a, int a,
                                          psdp_device_kind_t kind_b, int b, psdp_path_class_t* path_p);

#define PSDP_BUS_ID_BYTES 16
#define PSDP_NIC_NAME_BYTES 64

/* Where the mapper placed one rank. */
typedef struct psdp_rank_placement {
  int host;          /* index of the rank's host; hosts are numbered in ring order */
  int local_index;   /* position among its host's ranks, in ring order */
  int ring_position; /* position in the world ring */
  int numa_node;     /* os index of the NUMA node its staging memory and progress thread are bound to; -1: none */
  char gpu_bus_id[PSDP_BUS_ID_BYTES]; /* "" when CPU-only */
  char nic[PSDP_NIC_NAME_BYTES];      /* "" when the host has no NIC */
  psdp_path_class_t nic_path;         /* from its GPU (or NUMA node) to that NIC */
} psdp_rank_placement_t;

/* The mapping of hosts * ranks_per_host ranks onto `hosts` machines like this topology: rank r runs on host
 * r / ranks_per_host, with GPU r % ranks_per_host when the topology has at least ranks_per_host GPUs, else
 * CPU-only. rank_layout receives hosts * ranks_per_host ints (the layout for group_size, as in
 * psdp_plan_create); placements, when not NULL, as many entries indexed by rank. Simulated host h is named
 * "host<h>"; CPU-only ranks count as bound evenly over the N NUMA nodes (local rank i of P to node i*N/P).
 * Errors: invalid argument (rank_layout NULL, hosts or ranks_per_host < 1, hosts * ranks_per_host beyond
 * INT_MAX, group_size < 1 or not dividing the rank count). */
PSDP_API psdp_status_t psdp_topology_map(psdp_topology_h topo, int hosts, int ranks_per_host, int group_size,
                                         int* rank_layout, psdp_rank_placement_t* placements);

/* The communicator's rank layout for shard groups of group_size, from the mapping computed at init: `size`
 * ints, the same on every rank, to pass to psdp_plan_create (psdp_state_register uses it). Local; never
 * blocks. Errors: invalid argument (group_size < 1 or not dividing the size). */
PSDP_API psdp_status_t psdp_comm_get_layout(psdp_comm_h comm, int group_size, int* rank_layout);
/* Where the mapper placed `rank` of the communicator (any rank, not only the caller). */
PSDP_API psdp_status_t psdp_comm_get_placement(psdp_comm_h comm, int rank, psdp_rank_placement_t* placement_p);

/* ---------------------------------------------------------------------------------------------------
 * Shard plans
 *
 * A plan says which rank owns which elements of the training state. It is a deterministic pure function
 * of the buffer list (names, counts, dtypes, roles, memory kinds: never addresses or device indices), the
 * world size, the rank layout and the plan configuration, so every rank computes the same plan, with the
 * same hash, on every run; no communicator is needed. psdp_plan_create reads no environment variable.
 *
 * Flat spaces: the parameters are laid end to end, in registration order, in one flat element space per
 * (parameter dtype, memory kind, and the dtype and memory kind of their gradients). Gradient i (the i-th
 * buffer with role gradient) pairs with parameter i, has its count and shares its offsets; its dtype may
 * differ (e.g. bfloat16 parameters, float32 gradients). Gradients are optional: with none, the plan is of
 * the parameters alone. Optimizer-state and gradient-shard buffers are not in the spaces: each holds the
 * elements the rank owns (psdp_plan_optimizer_state_count), in the order of its shard file (below), chunk c's
 * from psdp_plan_shard_offset on.
 *
 * Alignment and chunks are in bytes, pieces in whole elements. In a space whose dtypes are s_min <= s_max
 * bytes wide, the alignment unit is u = align_bytes / s_min elements, so every piece boundary lies a
 * multiple of align_bytes into the flat buffer of either dtype. A chunk holds chunk_bytes / s_max elements
 * rounded down to a multiple of L*u (L = G at level group, W at level world), and at least L*u; the last
 * chunk of a space holds the rest. Chunks are numbered in registration order of their first element.
 * Each chunk is split into G group pieces, one per member of a shard group, and at level world each group
 * piece into R = W/G world pieces, one per replica group. Pieces are made of whole alignment units: a chunk
 * of n elements is U = ceil(n/u) units, the last one partial when u does not divide n, and each of its G
 * group pieces holds floor(U/G) or ceil(U/G) of them, the pieces with more units last (world pieces split
 * their group piece's units the same way). So every piece starts on a unit, the element counts of any two
 * pieces of a chunk differ by at most u, and the chunk's last piece, which holds its partial unit, can be
 * smaller than the one before it: a chunk of 21076 elements with u = 64 is 330 units, pieces of 165 units
 * each, 10560 and 10516 elements.
 *
 * Rank layout: rank_layout[k*G + g] is member g of shard group k (and so replica k of replica group g); it
 * must be a permutation of [0, W). NULL: contiguous blocks of G ranks (rank r is member r % G of group
 * r / G). The rank at (k, g) owns group piece g of every chunk at level group, world piece (g, k) at level
 * world.
 *
 * The teams of a layout: the shard groups are communicators of the ranks layout[k*G + 0 .. k*G + G-1], in
 * that order, and the replica groups of the ranks layout[0*G + g], layout[1*G + g], ... . With the layout of
 * psdp_comm_get_layout, psdp_comm_split_layout makes both; by hand, the rank at position p = k*G + g (the
 * index of its rank in the layout) makes them with psdp_comm_split: color k, key g for its shard group; color
 * g, key k for its replica group (README, "Shard plans", has the whole sequence). Member g of a shard group is then
 * rank g of that communicator, so a chunk's reduce-scatter and all-gather over it run with count padded_group_piece:
 * block g of the reduce-scatter input is group piece g of the chunk, zero-padded to padded_group_piece elements; the
 * all-gather returns the pieces in the same blocks. At level group, group piece g is what member g owns
 * (psdp_plan_owned_ranges of its world rank), and it is then all-reduced over the replica group. At level
 * world a rank owns only its world piece (g, k); group piece g is world pieces (g, 0), ..., (g, R-1) end to end,
 * the owned ranges of ranks layout[0*G + g], layout[1*G + g], ..., and after the shard group's reduce-scatter it
 * is reduce-scattered over the replica group with count padded_world_piece, block k being world piece (g, k)
 * zero-padded.
 *
 * Thread safety: a plan is immutable once created; any thread may query it concurrently. Queries never
 * block. Errors are recorded as the last error of the calling thread (psdp_get_last_error(NULL)).
 * ------------------------------------------------------------------------------------------------ */
typedef struct psdp_plan* psdp_plan_h;

typedef enum psdp_buffer_role {
  PSDP_BUFFER_PARAMETER = 0,
  PSDP_BUFFER_GRADIENT = 1,        /* pairs with the parameter of the same index among parameters */
  PSDP_BUFFER_OPTIMIZER_STATE = 2, /* sized by the plan; registered so that checkpoints can find it */
  PSDP_BUFFER_GRADIENT_SHARD = 3,  /* at most one, float32, sized like optimizer state: where steps deliver the
                                      reduced gradient in float32 (mixed precision: see "Steps") */
  PSDP_BUFFER_ROLE_MAX_ENUM = 0x7fffffff
} psdp_buffer_role_t;

typedef enum psdp_memory_kind {
  PSDP_MEMORY_HOST = 0,
  PSDP_MEMORY_CUDA = 1,
  PSDP_MEMORY_KIND_MAX_ENUM = 0x7fffffff
} psdp_memory_kind_t;

/* One registered buffer. The plan copies name and ignores ptr and device (they differ between ranks). */
typedef struct psdp_buffer_desc {
  const char* name; /* unique, non-empty */
  void* ptr;        /* the buffer; may be NULL for psdp_plan_create */
  size_t count;     /* elements (> 0 but for optimizer state); its bytes must fit 64 bits */
  psdp_dtype_t dtype;
  psdp_buffer_role_t role;
  psdp_memory_kind_t memory_kind;
  int device; /* CUDA device index (>= 0) for PSDP_MEMORY_CUDA; ignored for host */
} psdp_buffer_desc_t;

typedef enum psdp_shard_level {
  PSDP_SHARD_LEVEL_UNSET = -1, /* group */
  PSDP_SHARD_LEVEL_GROUP = 0,  /* each rank owns 1/G of every chunk, replicated across the R replica groups */
  PSDP_SHARD_LEVEL_WORLD = 1,  /* each rank owns 1/W of every chunk, nested in its group piece */
  PSDP_SHARD_LEVEL_MAX_ENUM = 0x7fffffff
} psdp_shard_level_t;

#define PSDP_PLAN_CONFIG_MAGIC 0x70706c6eu /* "ppln" */

/* Plan configuration, extensible like psdp_config_t: initialise with PSDP_PLAN_CONFIG_INITIALIZER. Unset
 * fields take the built-in default named beside them (never the environment). */
typedef struct psdp_plan_config {
  size_t size;          /* sizeof(psdp_plan_config_t) as the caller compiled it */
  unsigned int magic;   /* PSDP_PLAN_CONFIG_MAGIC */
  unsigned int version; /* PSDP_VERSION_CODE the caller compiled against */
  int group_size;       /* G, dividing the world size: G = W is ZeRO-1/2 style; unset: 0 (G = W) */
  int level;            /* a psdp_shard_level_t; unset: PSDP_SHARD_LEVEL_UNSET (group) */
  size_t chunk_bytes;   /* target bytes of one chunk's collective; unset: 0 (64 MiB) */
  size_t align_bytes;   /* a power of two, >= every parameter and gradient dtype size; unset: 0 (256) */
  size_t pad_bytes;     /* 0 or a multiple of align_bytes: the equal per-rank count of a chunk's collectives
                           is rounded up to it (padded_*_piece below); unset: 0 (align_bytes) */
} psdp_plan_config_t;

#define PSDP_PLAN_CONFIG_INITIALIZER \
  { sizeof(psdp_plan_config_t), PSDP_PLAN_CONFIG_MAGIC, PSDP_VERSION_CODE, 0, PSDP_SHARD_LEVEL_UNSET, 0, 0, 0 }

/* One chunk: one reduce-scatter of gradients and one all-gather of parameters. The dtype and memory kind of
 * its gradients are its space's (psdp_plan_get_space). */
typedef struct psdp_plan_chunk {
  size_t space;                   /* its flat space (chunks of one space hold the same dtypes) */
  psdp_dtype_t dtype;             /* of its parameters */
  psdp_memory_kind_t memory_kind; /* of its parameters */
  size_t offset;                  /* its first element in the space */
  size_t count;                   /* elements */
  size_t padded_group_piece;      /* equal per-member count of its collectives within a shard group */
  size_t padded_world_piece;      /* the same for world pieces; equals padded_group_piece at level group */
} psdp_plan_chunk_t;

/* Elements [offset, offset + count) of buffer `buffer` (an index into the list given to psdp_plan_create;
 * always a parameter: the paired gradient's range is the same). */
typedef struct psdp_owned_range {
  int buffer;
  size_t offset;
  size_t count;
} psdp_owned_range_t;

/* Copy `count` elements from offset from_offset of old rank from_rank's shard file to offset to_offset of
 * new rank to_rank's. A rank's shard file is its owned ranges of every chunk, in chunk order, end to end
 * (psdp_plan_owned_ranges with PSDP_PLAN_ALL_CHUNKS); offsets count elements. */
typedef struct psdp_reshard_move {
  int from_rank;
  int to_rank;
  size_t from_offset;
  size_t to_offset;
  size_t count;
} psdp_reshard_move_t;

/* Pass as `chunk` to ask about every chunk at once. */
#define PSDP_PLAN_ALL_CHUNKS ((size_t)-1)

/* Creates a plan for `nbuffers` buffers over `world_size` ranks. rank_layout is NULL or world_size ints
 * (see above); config may be NULL (all defaults). Local, never blocks. Errors: invalid argument naming the
 * field, and the buffer by index and name, for: no buffers or no parameter, a zero count, a NULL, empty or
 * duplicate name, an unknown dtype, role or memory kind, a negative CUDA device, gradients that do not pair
 * with the parameters, a byte size beyond 64 bits, world_size < 1, a group_size that does not divide it, an
 * alignment that is not a power of two or is smaller than a dtype, a pad_bytes that is not a multiple of
 * it, a rank layout that is not a permutation, a malformed config, a gradient shard that is not one float32
 * host buffer or whose gradients are not float16, bfloat16 or float32. The counts of optimizer-state and
 * gradient-shard buffers are not checked here (they differ per rank and are sized from the plan). */
PSDP_API psdp_status_t psdp_plan_create(const psdp_buffer_desc_t* buffers, int nbuffers, int world_size,
                                        const int* rank_layout, const psdp_plan_config_t* config, psdp_plan_h* plan_p);

/* Releases the plan. Freeing twice (or a pointer that never was a plan) is invalid usage, never a crash. */
PSDP_API psdp_status_t psdp_plan_free(psdp_plan_h plan);

/* A 64-bit digest of everything the plan is a function of (buffer names, counts, dtypes, roles, memory
 * kinds; world size, rank layout, configuration; not optimizer-state or gradient-shard buffers, addresses or
 * devices). Ranks compare it to check that they agree; stable across runs and hosts. */
PSDP_API psdp_status_t psdp_plan_hash(psdp_plan_h plan, uint64_t* hash_p);

PSDP_API psdp_status_t psdp_plan_chunk_count(psdp_plan_h plan, size_t* count_p);
PSDP_API psdp_status_t psdp_plan_get_chunk(psdp_plan_h plan, size_t chunk, psdp_plan_chunk_t* chunk_p);

#define PSDP_PLAN_SPACE_MAGIC 0x70737063u /* "pspc" */

/* One flat space (psdp_plan_chunk_t.space): what a caller needs to pack its chunks' gradients and unpack
 * their parameters, elements of which dtype and in which memory. An output that can grow: initialise it
 * with PSDP_PLAN_SPACE_INITIALIZER, which records the size the caller compiled against; psdp fills the fields
 * that fit in that size, so later versions can add fields without breaking older callers. */
typedef struct psdp_plan_space {
  size_t size;                         /* sizeof(psdp_plan_space_t) as the caller compiled it */
  unsigned int magic;                  /* PSDP_PLAN_SPACE_MAGIC */
  unsigned int version;                /* PSDP_VERSION_CODE the caller compiled against */
  psdp_dtype_t dtype;                  /* of its parameters */
  psdp_memory_kind_t memory_kind;      /* of its parameters */
  int has_gradients;                   /* 1 when gradients are registered; 0: a plan of the parameters alone */
  psdp_dtype_t grad_dtype;             /* of its gradients (the parameters' when has_gradients is 0) */
  psdp_memory_kind_t grad_memory_kind; /* of its gradients (the parameters' when has_gradients is 0) */
  int reserved;                        /* 0; keeps count 8-byte aligned without a hidden hole */
  size_t count;                        /* elements: its parameters end to end */
  size_t align_unit;                   /* u: elements per alignment unit, the grain of its pieces */
  size_t chunk_count;                  /* chunks of this space */
} psdp_plan_space_t;

#define PSDP_PLAN_SPACE_INITIALIZER                                                                         \
  {                                                                                                         \
    sizeof(psdp_plan_space_t), PSDP_PLAN_SPACE_MAGIC, PSDP_VERSION_CODE, PSDP_FLOAT32, PSDP_MEMORY_HOST, 0, \
        PSDP_FLOAT32, PSDP_MEMORY_HOST, 0, 0, 0, 0                                                          \
  }

/* The number of flat spaces, and space `space` in [0, count). Errors: invalid argument (space out of range,
 * space_p NULL or not initialised with PSDP_PLAN_SPACE_INITIALIZER). */
PSDP_API psdp_status_t psdp_plan_space_count(psdp_plan_h plan, size_t* count_p);
PSDP_API psdp_status_t psdp_plan_get_space(psdp_plan_h plan, size_t space, psdp_plan_space_t* space_p);

/* The ranges `rank` owns in chunk `chunk` (or, for PSDP_PLAN_ALL_CHUNKS, in every chunk, in chunk order),
 * ascending, split where a buffer ends. Writes min(capacity, total) ranges to `ranges` (NULL if capacity
 * is 0) and the total to *count_p: call with capacity 0 first to size the array. */
PSDP_API psdp_status_t psdp_plan_owned_ranges(psdp_plan_h plan, int rank, size_t chunk, psdp_owned_range_t* ranges,
                                              size_t capacity, size_t* count_p);

/* Elements `rank` owns in `chunk` (or in every chunk, for PSDP_PLAN_ALL_CHUNKS). */
PSDP_API psdp_status_t psdp_plan_owned_count(psdp_plan_h plan, int rank, size_t chunk, size_t* count_p);

/* Elements of each optimizer-state buffer of `rank`: the elements it owns over all chunks. */
PSDP_API psdp_status_t psdp_plan_optimizer_state_count(psdp_plan_h plan, int rank, size_t* count_p);

/* Where chunk `chunk`'s owned elements start in `rank`'s shard file: the index, in its optimizer state and
 * gradient shard, of the first element of its psdp_plan_owned_ranges(plan, rank, chunk), which follow one
 * another from there. */
PSDP_API psdp_status_t psdp_plan_shard_offset(psdp_plan_h plan, int rank, size_t chunk, size_t* offset_p);

/* The chunk that covers element `offset` of parameter or gradient `buffer`, and the element's offset from
 * the chunk's first element (chunk_offset_p may be NULL). Errors: invalid argument for a buffer index out
 * of range, an optimizer-state or gradient-shard buffer, an offset past the buffer's end. */
PSDP_API psdp_status_t psdp_plan_find_chunk(psdp_plan_h plan, int buffer, size_t offset, size_t* chunk_p,
                                            size_t* chunk_offset_p);

/* The moves that turn the shard files saved under old_plan into those of new_plan (any W, G, level, chunk
 * size, alignment or rank layout, over the same parameters, matched by name), sorted by (to_rank,
 * to_offset): every element of every new file is written exactly once. Where several old ranks hold an
 * element (level group), the new rank reads its own old file if it held it, else the holder in replica
 * group to_rank mod R. Writes min(capacity, total) moves and the total to *count_p, as
 * psdp_plan_owned_ranges. Errors: invalid argument when the parameters differ (a name missing on either
 * side, or another count). */
PSDP_API psdp_status_t psdp_plan_reshard_moves(psdp_plan_h old_plan, psdp_plan_h new_plan, psdp_reshard_move_t* moves,
                                               size_t capacity, size_t* count_p);

/* ---------------------------------------------------------------------------------------------------
 * Registered state
 *
 * A rank registers its training state (parameters, gradients, optimizer state) with the communicator that
 * will move it. Registration is collective: every rank passes the same list (names, dtypes, roles, memory
 * kinds, in the same order, and the same counts for parameters and gradients; pointers and device indices
 * are each rank's own) and the same plan configuration, and gets the shard plan for W = the communicator's
 * size and its rank layout for G (psdp_comm_get_layout: shard groups inside hosts where G allows). The one
 * count that differs between ranks is that of an optimizer-state (or gradient-shard) buffer: it must be this
 * rank's owned element count, psdp_plan_optimizer_state_count(plan, rank), which the ranks do not compare.
 * The plan does not depend on those counts (psdp_plan_create does not read them), so the sequence is:
 *   1. psdp_comm_get_layout(comm, G, layout);
 *   2. psdp_plan_create on the list, with any count (0) for optimizer state, W and that layout;
 *   3. psdp_plan_optimizer_state_count(plan, rank, &n); allocate each optimizer-state (and gradient-shard)
 *      buffer of n elements and set its count to n;
 *   4. psdp_state_register(comm, the list, ...): its plan equals the one of step 2 (same hash).
 * Buffers are not copied: they must stay valid until psdp_state_deregister.
 * ------------------------------------------------------------------------------------------------ */
typedef struct psdp_state* psdp_state_h;

/* Collective over comm; blocks until every rank has called it, up to the communicator's timeout. The ranks
 * compare what they registered: a rank whose list or configuration differs makes every rank fail with
 * PSDP_ERR_MISMATCH, the message naming the first buffer that differs and the ranks on each side (or the
 * configuration). A rank whose own arguments are invalid fails with invalid argument naming the field and
 * buffer, and the other ranks with invalid argument naming that rank; nobody waits for a timeout. Nothing
 * is registered on any rank then, and the communicator stays usable. A NULL ptr is allowed only for a
 * buffer of count 0. Errors: invalid argument, mismatch, timeout, remote. */
PSDP_API psdp_status_t psdp_state_register(psdp_comm_h comm, const psdp_buffer_desc_t* buffers, int nbuffers,
                                           const psdp_plan_config_t* config, psdp_state_h* state_p);

/* Forgets the registration (local; the buffers are the caller's). Errors: invalid argument (NULL), invalid
 * usage (deregistered already). */
PSDP_API psdp_status_t psdp_state_deregister(psdp_state_h state);

/* A copy of the state's plan, for the psdp_plan_* queries; free it with psdp_plan_free. */
PSDP_API psdp_status_t psdp_state_get_plan(psdp_state_h state, psdp_plan_h* plan_p);

/* What is registered: the number of buffers, and buffer `index` as this rank registered it (its name
 * stays valid until psdp_state_deregister). */
PSDP_API psdp_status_t psdp_state_buffer_count(psdp_state_h state, int* count_p);
PSDP_API psdp_status_t psdp_state_get_buffer(psdp_state_h state, int index, psdp_buffer_desc_t* buffer_p);

/* ---------------------------------------------------------------------------------------------------
 * Steps: the sharded training step, chunk by chunk
 *
 * A step of a registered state runs, per chunk of its plan: a reduce-scatter of the chunk's gradients inside
 * the shard group; with replicas (G < W) an all-reduce (level group) or reduce-scatter (level world) of the
 * group piece across the replica group; the framework's update of the owned piece; an all-gather of the
 * updated parameters (across the replica group at level world, then inside the shard group). Many chunks
 * are in flight at once, so the reduction of one chunk overlaps the update of another and the gather of a
 * third, and reductions start while backward still produces gradients. The framework drives it by polling
 * (no callbacks into it):
 *
 *   psdp_step_begin(state, NULL, &step);
 *   ... backward: psdp_step_grads_ready(step, buffer, offset, count) as gradients become final ...
 *   psdp_step_backward_done(step);
 *   for (size_t done = 0; done < nchunks;) {
 *     psdp_step_chunk_t chunk = PSDP_STEP_CHUNK_INITIALIZER;
 *     psdp_step_next_chunk(step, 1.0, &chunk);
 *     if (chunk.chunk == PSDP_STEP_NO_CHUNK) continue;       (nothing reduced yet)
 *     update chunk.ranges[0 .. chunk.nranges): gradients there are the reduced ones;
 *     psdp_step_chunk_updated(step, chunk.chunk); ++done;
 *   }
 *   psdp_step_wait_params(step, buffer, offset, count, timeout) before the next forward uses them, then
 *   psdp_step_end(step);
 *
 * Ownership: after a chunk is handed out, the owned ranges of the rank's gradient buffers hold the reduced
 * gradient (sum, or average with op PSDP_AVG, over all W ranks), or, with a gradient shard, the shard's
 * elements of the chunk do (below); the framework updates the same ranges of its parameter buffers and of
 * its optimizer state. psdp_step_chunk_updated starts the chunk's gather, which writes every element of the
 * chunk's parameters on every rank (the owned ones with the values just written). Until psdp_step_wait_params
 * says a range is gathered, the framework must not read or write those parameters, nor touch gradients it has
 * reported ready, except its owned ranges of handed-out chunks.
 *
 * Ordering across ranks: every rank reports gradients in its own order and granularity; psdp posts each kind
 * of collective in one order every rank shares (reductions backward, the last chunk first; gathers forward;
 * both settable), on teams of the state's own made at registration, so a step never deadlocks and never
 * mismatches whatever the readiness order on each rank (docs/chunk-engine.md has the argument). The one
 * obligation on the framework: within a step, report every gradient (or call psdp_step_backward_done)
 * without first waiting unboundedly for a chunk of that step, and update every chunk it is handed.
 *
 * Gradient accumulation over micro-batches: no psdp call until the last micro-batch. The framework sums
 * the first micro-batches' gradients into its gradient buffers itself, begins the step before the last
 * micro-batch's backward, and reports each gradient once that backward has added its part: nothing is
 * reduced before, so the reductions cost one step's, whatever the number of micro-batches, and they overlap
 * the last backward. Unused parameters: PSDP_UNUSED_GRADS_ZERO treats the gradients never reported as zero.
 * After a step the owned ranges of the gradient buffers (or the gradient shard) hold the reduced gradient and
 * the other elements are undefined (partial sums may be left there): zero the buffers before the next step's
 * first micro-batch.
 *
 * Mixed precision: float16 or bfloat16 parameters and gradients, float32 master weights in the optimizer
 * state. Register a gradient shard (PSDP_BUFFER_GRADIENT_SHARD: float32, psdp_plan_optimizer_state_count
 * elements, in shard-file order like the optimizer state). A step then delivers each handed-out chunk's
 * reduced gradient there in float32, from psdp_plan_shard_offset(plan, rank, chunk) on (its owned ranges end
 * to end), and leaves the gradient buffers undefined. The framework updates its float32 master weights from
 * it and writes them, rounded, into its owned parameter ranges; the parameters are gathered in their own
 * dtype. The partial sums (partial_sums in the step config) are by default float32 with a gradient shard:
 * the 16-bit gradients are widened as they are packed, so a reduction moves 4 bytes per element instead of 2
 * (as much as float32 gradients would) and delivers the float32 sum of the 16-bit gradients, exact wherever
 * float32 addition is (integers below 2^24). PSDP_PARTIALS_GRADIENT_DTYPE halves those bytes: each combine of
 * the reduction adds in float32 and rounds to the gradients' dtype, at most W - 1 times on the way to any
 * element, so the delivered s' of a sum s of the W ranks' gradients x_r satisfies
 *   |s' - s| <= g(W - 1) * sum_r |x_r|,  g(n) = n*u / (1 - n*u),  u = 2^-8 (bfloat16), 2^-11 (float16)
 * (with PSDP_AVG, |s' - s/W| <= g(W + 1) * sum_r |x_r| / W), and float16 sums overflow beyond 65504.
 * Without a gradient shard, PSDP_PARTIALS_FLOAT32 also works: the reduced piece is rounded once into the
 * gradient buffers. The gradient norm is of the delivered values.
 *
 * Threading: the calls of one step may come from different threads (backward hooks reporting gradients
 * while the training thread waits in psdp_step_next_chunk); they are serialised, and waiting calls let the
 * others in. psdp_step_end must not overlap another call on the step. One step per state at a time; steps of
 * different states may run concurrently.
 *
 * Failure: a collective's error (a peer lost, a timeout, a mismatch) fails the step, and every later call
 * on it returns that error; the state's teams are failed with it, so the state cannot run further steps
 * (deregister it). Chunks already gathered hold consistent parameters; chunks handed out hold the reduced
 * gradient in their owned ranges; any other chunk's buffers are undefined.
 * ------------------------------------------------------------------------------------------------ */
typedef struct psdp_step* psdp_step_h;

typedef enum psdp_step_order {
  PSDP_STEP_ORDER_DEFAULT = 0,  /* reductions backward, gathers forward */
  PSDP_STEP_ORDER_FORWARD = 1,  /* chunk 0 first */
  PSDP_STEP_ORDER_BACKWARD = 2, /* the last chunk first */
  PSDP_STEP_ORDER_MAX_ENUM = 0x7fffffff
} psdp_step_order_t;

typedef enum psdp_step_mode {
  PSDP_STEP_PIPELINED = 0, /* chunks (or groups of chunks_per_transfer) reduced and gathered with many in flight */
  PSDP_STEP_BULK = 1,      /* one reduction of each whole flat space, every update, then one gather: the
                              baseline of frameworks without pipelining, measured in the same binary */
  PSDP_STEP_MODE_MAX_ENUM = 0x7fffffff
} psdp_step_mode_t;

/* The global gradient norm a step computes (psdp_step_grad_norm), for clipping and for loss scaling's overflow
 * check: psdp sums the squares of each rank's owned piece of each chunk once it is reduced (float64) and
 * combines them across the shard group and, at level world, the replicas, so every rank gets the same bits.
 * What each policy costs the pipeline:
 *   NONE: nothing.
 *   GLOBAL: this step's norm; no chunk is handed out before every chunk is reduced and the norm combined (one
 *     all-gather of 16 bytes per rank on the shard group, and one on the replica group at level world), so
 *     updates cannot overlap reductions; after that, updates and gathers still pipeline with each other.
 *   DEFERRED: the previous step's norm, at once; this step's is computed for the next step, off the critical
 *     path (the same all-gathers after the last reduction). Clipping then uses a norm one step old, and an
 *     overflow is seen one step late.
 * Both pay one more pass over the owned gradients (the sum of squares). */
typedef enum psdp_grad_norm_policy {
  PSDP_GRAD_NORM_NONE = 0,
  PSDP_GRAD_NORM_GLOBAL = 1,
  PSDP_GRAD_NORM_DEFERRED = 2,
  PSDP_GRAD_NORM_MAX_ENUM = 0x7fffffff
} psdp_grad_norm_policy_t;

/* The dtype of float16 and bfloat16 gradients' partial sums in a step's reductions ("Mixed precision" above);
 * gradients of other dtypes are reduced in their own. */
typedef enum psdp_partial_sums {
  PSDP_PARTIALS_DEFAULT = 0,        /* float32 when the state has a gradient shard, else the gradients' dtype */
  PSDP_PARTIALS_FLOAT32 = 1,        /* widened and summed in float32: 4 bytes per element on the wire */
  PSDP_PARTIALS_GRADIENT_DTYPE = 2, /* rounded to the gradients' dtype at each combine: 2 bytes, the bound above */
  PSDP_PARTIALS_MAX_ENUM = 0x7fffffff
} psdp_partial_sums_t;

typedef enum psdp_unused_grads {
  PSDP_UNUSED_GRADS_ERROR = 0, /* psdp_step_backward_done fails naming the first range never reported */
  PSDP_UNUSED_GRADS_ZERO = 1,  /* those ranges of the gradient buffers are zeroed and count as reported */
  PSDP_UNUSED_GRADS_MAX_ENUM = 0x7fffffff
} psdp_unused_grads_t;

#define PSDP_STEP_CONFIG_MAGIC 0x70737470u /* "pstp" */

/* Step configuration, extensible like psdp_config_t: initialise with PSDP_STEP_CONFIG_INITIALIZER. The
 * orders, the op, the mode, chunks_per_transfer, grad_norm and partial_sums must be alike on every rank
 * (psdp_step_begin checks); the windows are each rank's own. */
typedef struct psdp_step_config {
  size_t size;                /* sizeof(psdp_step_config_t) as the caller compiled it */
  unsigned int magic;         /* PSDP_STEP_CONFIG_MAGIC */
  unsigned int version;       /* PSDP_VERSION_CODE the caller compiled against */
  size_t reduce_window;       /* transfers (chunks, unless grouped) in their reductions at once; 0: the
                                 tuning file's engine rule (README, "Tuning"), else 2 */
  size_t gather_window;       /* transfers in their gathers at once; 0: as reduce_window */
  int reduce_order;           /* a psdp_step_order_t; default backward */
  int gather_order;           /* a psdp_step_order_t; default forward */
  psdp_op_t op;               /* PSDP_SUM (default) or PSDP_AVG */
  int unused_grads;           /* a psdp_unused_grads_t */
  int mode;                   /* a psdp_step_mode_t; default pipelined */
  size_t chunks_per_transfer; /* pipelined: consecutive chunks of a space whose collectives run together
                                 (small chunks grouped); 0: the tuning file's engine rule, else 1 */
  void* stream;               /* reserved for steps on CUDA memory: NULL */
  int grad_norm;              /* a psdp_grad_norm_policy_t; default none */
  int partial_sums;           /* a psdp_partial_sums_t; default: float32 with a gradient shard */
  int online_tuning;          /* 1: the engine tunes the windows, grouping and fragment left at 0 during the
                                 first steps, then keeps the fastest (psdp_state_engine_tuning); 0: off (default) */
  size_t fragment_bytes;      /* fragment of the ring transfers of the step's collectives; 0: the tuning
                                 file's engine rule, else the collective rules' and PSDP_FRAGMENT_BYTES. At most
                                 the largest of those, which the staging was made for; at least 64 */
} psdp_step_config_t;

#define PSDP_STEP_CONFIG_INITIALIZER                                                                                  \
  {                                                                                                                   \
    sizeof(psdp_step_config_t), PSDP_STEP_CONFIG_MAGIC, PSDP_VERSION_CODE, 0, 0, 0, 0, PSDP_SUM, 0, 0, 0, NULL, 0, 0, \
        0, 0                                                                                                          \
  }

/* psdp_step_chunk_t.chunk when no chunk was handed out. */
#define PSDP_STEP_NO_CHUNK ((size_t)-1)
/* psdp_step_grads_ready's buffer for "every gradient not reported yet". */
#define PSDP_STEP_ALL_BUFFERS (-1)

/* A chunk handed to the framework: its index in the plan and the ranges this rank owns in it (valid until
 * psdp_step_end). */
typedef struct psdp_step_chunk {
  size_t chunk;                     /* or PSDP_STEP_NO_CHUNK */
  const psdp_owned_range_t* ranges; /* this rank's owned ranges of it (parameter buffers; gradients alike) */
  size_t nranges;
  size_t remaining; /* chunks not handed out yet, after this one */
  void* event;      /* reserved for steps on CUDA memory: NULL */
} psdp_step_chunk_t;

#define PSDP_STEP_CHUNK_INITIALIZER \
  { PSDP_STEP_NO_CHUNK, NULL, 0, 0, NULL }

typedef enum psdp_chunk_state {
  PSDP_CHUNK_AWAITING_GRADS = 0, /* some of its gradients are not reported yet */
  PSDP_CHUNK_GRADS_READY = 1,    /* reported, waiting for its turn (the order) or a window slot */
  PSDP_CHUNK_REDUCING = 2,
  PSDP_CHUNK_REDUCED = 3, /* reduced: handed out, or next to be */
  PSDP_CHUNK_UPDATED = 4, /* updated, its gather waiting for its turn or a slot */
  PSDP_CHUNK_GATHERING = 5,
  PSDP_CHUNK_GATHERED = 6,
  PSDP_CHUNK_STATE_MAX_ENUM = 0x7fffffff
} psdp_chunk_state_t;

/* Begins the next step of `state` (config NULL: all defaults). Collective over the state's ranks: they
 * check that they are at the same step, with the same plan, orders, op, mode, grouping, norm policy and
 * partial sums (mismatch naming the rank, and which one lags). Chunks inside one buffer whose pieces need no
 * padding run in place on the registered buffers (their reductions too, unless widened to float32); the
 * others use pack buffers ((reduce window + gather window) x the largest of them; none when every chunk runs
 * in place), made on the first step that needs them and kept for the next. Errors: invalid argument (config
 * malformed: the field), invalid usage (a step of this state has not ended), unsupported (CUDA memory, or no
 * gradients registered), mismatch, timeout, remote. */
PSDP_API psdp_status_t psdp_step_begin(psdp_state_h state, const psdp_step_config_t* config, psdp_step_h* step_p);

/* Gradients [offset, offset + count) of registered buffer `buffer` (a gradient, or its parameter) are final
 * for this step; PSDP_STEP_ALL_BUFFERS (offset and count ignored): every gradient not reported yet. Any
 * order and granularity; never blocks. Errors: invalid argument (the buffer or range), invalid usage (a
 * range reported before in this step, or after psdp_step_backward_done), the step's failure. */
PSDP_API psdp_status_t psdp_step_grads_ready(psdp_step_h step, int buffer, size_t offset, size_t count);

/* Backward is over: gradients never reported are unused, handled as the step's unused_grads says. Errors:
 * invalid usage (unused gradients with PSDP_UNUSED_GRADS_ERROR: names the first buffer and range; the step
 * then fails, and its peers with it), the step's failure. */
PSDP_API psdp_status_t psdp_step_backward_done(psdp_step_h step);

/* Hands out the next reduced chunk, waiting up to timeout_s seconds for one (0: just look; under
 * PSDP_PROGRESS=caller a look also advances the step's collectives, for a few microseconds, as
 * psdp_request_test does, so a framework that only polls between backward's buckets keeps them moving).
 * chunk_p->chunk is PSDP_STEP_NO_CHUNK when none was reduced in time, or when every chunk has been handed out
 * (remaining 0).
 * Errors: invalid argument (chunk_p NULL), the step's failure (remote, timeout, mismatch). */
PSDP_API psdp_status_t psdp_step_next_chunk(psdp_step_h step, double timeout_s, psdp_step_chunk_t* chunk_p);

/* The framework has written the owned parameters of a handed-out chunk: its gather may start. Errors: invalid
 * argument (no such chunk), invalid usage (not handed out, or updated already), the step's failure. */
PSDP_API psdp_status_t psdp_step_chunk_updated(psdp_step_h step, size_t chunk);

/* Waits up to timeout_s seconds until parameters [offset, offset + count) of `buffer` are gathered. Errors:
 * invalid argument (the buffer or range), invalid usage (a chunk it needs cannot be gathered before the
 * framework updates a chunk: names it), timeout (the step goes on: call again), the step's failure. */
PSDP_API psdp_status_t psdp_step_wait_params(psdp_step_h step, int buffer, size_t offset, size_t count,
                                             double timeout_s);

/* Waits for every chunk's gather, then ends the step and frees the handle. Errors: invalid usage (a chunk not
 * updated yet: names it; the step stays), the step's failure (the handle is freed then too). */
PSDP_API psdp_status_t psdp_step_end(psdp_step_h step);

/* A step's gradient norm (psdp_grad_norm_policy_t). */
typedef struct psdp_grad_norm {
  double sq_norm; /* the sum over every element of the reduced gradient (sum, or average with PSDP_AVG) of its
                     square, in float64; inf or NaN when an element is */
  int nonfinite;  /* 1 when some element of the reduced gradient is inf or NaN (loss scaling: skip the update) */
  int available;  /* 0 only for a deferred policy with no earlier norm (the state's first step) */
  uint64_t step;  /* the step (counted from 0 per state) whose gradients it is of */
} psdp_grad_norm_t;

/* The norm the step's policy gives: GLOBAL, this step's, waiting up to timeout_s seconds until every chunk is
 * reduced and the ranks have combined it (no chunk is handed out before: call it before the update loop);
 * DEFERRED, the previous step's at once. Clipping is the framework's: scale each owned gradient by
 * min(1, max_norm / sqrt(sq_norm)) before updating; every rank gets the same sq_norm bits. Errors: invalid
 * argument (norm_p NULL), invalid usage (policy none; GLOBAL with gradients not yet reported and nothing in
 * flight), timeout (the step goes on: call again), the step's failure. */
PSDP_API psdp_status_t psdp_step_grad_norm(psdp_step_h step, double timeout_s, psdp_grad_norm_t* norm_p);

/* Where chunk `chunk` of the step is, for diagnostics. Never blocks. */
PSDP_API psdp_status_t psdp_step_chunk_state(psdp_step_h step, size_t chunk, psdp_chunk_state_t* state_p);

/* The stages of a chunk in a step's timeline (psdp_state_step_events). */
typedef enum psdp_step_stage {
  PSDP_STAGE_REDUCE_IN_GROUP = 0,        /* reduce-scatter inside the shard group */
  PSDP_STAGE_REDUCE_ACROSS_REPLICAS = 1, /* all-reduce (level group) or reduce-scatter (level world); G < W only */
  PSDP_STAGE_UPDATE = 2,                 /* from handed out (psdp_step_next_chunk) to psdp_step_chunk_updated */
  PSDP_STAGE_GATHER_ACROSS_REPLICAS = 3, /* all-gather across the replica group; level world with G < W only */
  PSDP_STAGE_GATHER_IN_GROUP = 4,        /* all-gather inside the shard group */
  PSDP_STEP_STAGE_MAX_ENUM = 0x7fffffff
} psdp_step_stage_t;

/* One stage of one chunk: a collective stage from when its collective started (its first message could
 * leave) to when it completed; the update from when the chunk was handed out to when it was marked updated.
 * The collectives of a transfer (chunks grouped by chunks_per_transfer, or a whole space in bulk mode) give
 * each of its chunks the same times. Times are nanoseconds of CLOCK_MONOTONIC, which the processes of one
 * host share, so the timelines of a host's ranks line up. */
typedef struct psdp_step_event {
  size_t chunk;
  psdp_step_stage_t stage;
  int reserved; /* 0 */
  uint64_t begin_ns;
  uint64_t end_ns;
} psdp_step_event_t;

/* The timeline of the state's last step that ended (or failed), in the order its stages ended: every stage
 * of every chunk once for a step that ended. Writes min(capacity, total) events to `events` (NULL if capacity
 * is 0) and the total to *count_p, as psdp_plan_owned_ranges; 0 events before the first step ends. Local,
 * never blocks; not concurrently with psdp_step_end on the same state. With PSDP_TRACE_FILE set, the same stages are
 * also slices of the trace, on a track per stage. Errors: invalid argument (count_p NULL), invalid usage (a
 * deregistered state). */
PSDP_API psdp_status_t psdp_state_step_events(psdp_state_h state, psdp_step_event_t* events, size_t capacity,
                                              size_t* count_p);

/* Online tuning (psdp_step_config_t.online_tuning = 1, alike on every rank). During the first steps of a run
 * the engine tries settings of what the config leaves at 0: in pipelined steps reduce_window and
 * gather_window (alike) and chunks_per_transfer (unless PSDP_DETERMINISTIC=1, where grouping would change the
 * order of reductions); in either mode fragment_bytes (the ring's result does not depend on it). It starts
 * from the tuning file's engine rule, else the built-in 2 and 1 and the collectives' own fragment: first the
 * windows 1, 2, 4 and 8, then the groupings 1, 2, 4, 8 and 16 (transfers of at most 64 MiB) at the best
 * window, then, where another grouping won, the windows again at that grouping; last the fragments 128 KiB
 * to 4 MiB at the best of those, as far as the staging holds (PSDP_FRAGMENT_BYTES and the tuning file's
 * rules make it) and only those smaller than the largest block a ring transfer of the best setting's steps
 * moved (none where every transfer ran direct: a fragment is then never tried). Each setting runs 2 steps
 * and counts its faster; a setting must be 3% faster than the best so far to replace it. A step's time is
 * the slowest rank's, from the end of psdp_step_begin's agreement to the end of psdp_step_end, carried in the
 * agreement every step begin already makes, so every rank takes the same decisions and no extra message is
 * sent. The first step is not counted (it touches every page). After at most 35 steps the choice is kept for
 * the life of the state, and the communicator's log says it at info level with the rule a tuning file would
 * need for it. The plan's chunks (which decide ownership) are never changed. Steps explored run slower or
 * faster than the final setting; a failed step is not counted. */
typedef enum psdp_engine_tuning_phase {
  PSDP_ENGINE_TUNING_OFF = 0,       /* no step has asked for it */
  PSDP_ENGINE_TUNING_EXPLORING = 1, /* trying settings */
  PSDP_ENGINE_TUNING_FROZEN = 2,    /* the choice is made, and the last step begun ran it */
  PSDP_ENGINE_TUNING_PHASE_MAX_ENUM = 0x7fffffff
} psdp_engine_tuning_phase_t;

typedef struct psdp_engine_tuning {
  psdp_engine_tuning_phase_t phase;
  size_t window;              /* reduce window of the last step begun: a setting tried, or (frozen) the choice */
  size_t chunks_per_transfer; /* likewise (1: pipelined, each chunk alone; 0: bulk) */
  size_t steps;               /* steps measured, the uncounted first one included */
  double step_s;              /* the best setting's step time so far (slowest rank); 0 before one is measured */
  double start_step_s;        /* the starting setting's; 0 before it is measured */
  size_t fragment_bytes;      /* fragment of the ring transfers, likewise (0: the collectives' own) */
} psdp_engine_tuning_t;

/* Where the online tuning of `state`'s steps stands. Local, never blocks; not concurrently with
 * psdp_step_begin on the same state. Errors: invalid argument (tuning_p NULL), invalid usage (a deregistered
 * state). */
PSDP_API psdp_status_t psdp_state_engine_tuning(psdp_state_h state, psdp_engine_tuning_t* tuning_p);

#ifdef __cplusplus
}
#endif

#endif /* PSDP_PSDP_H_ */
