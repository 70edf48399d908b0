/// braid's C ABI: the C++ API of braid.hpp behind plain C functions (C99; usable from C and C++).
///
/// Every function returns a braid_result_t; no exception or signal crosses this boundary. When a call fails,
/// braid_last_error() gives its message on the calling thread. Buffers, counts, ranks and thread-safety follow
/// braid.hpp: collectives must be issued in the same order on every rank, and buffers must stay valid until the
/// call returns (every call here is blocking). Each call waits at most BRAID_TIMEOUT for its peers.
///
/// The numbering of braid_result_t, braid_datatype_t and braid_redop_t is part of the ABI and never changes.
#ifndef BRAID_BRAID_H_
#define BRAID_BRAID_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Outcome of a call; the values equal braid::ErrorCode's.
typedef enum braid_result {
  BRAID_SUCCESS = 0,
  BRAID_ERR_INVALID_ARGUMENT = 1,      ///< the caller passed something braid cannot use; nothing was sent
  BRAID_ERR_TIMEOUT = 2,               ///< a wait outlasted its timeout; the peers named had not arrived
  BRAID_ERR_PEER_LOST = 3,             ///< a peer died or became unreachable
  BRAID_ERR_MISMATCH = 4,              ///< ranks called different collectives, types, counts or roots
  BRAID_ERR_ABORTED = 5,               ///< the communicator was aborted
  BRAID_ERR_UNAVAILABLE = 6,           ///< the feature or resource is not available here (no GPU, no shm, memory, ...)
  BRAID_ERR_INTERNAL = 7,              ///< a bug in braid or a system call failing unexpectedly
  BRAID_RESULT_ENUM_MAX_ = 0x7fffffff  ///< not a result: keeps the enum int-sized with every compiler
} braid_result_t;

/// Element type of a buffer; the values equal braid::DataType's.
typedef enum braid_datatype {
  BRAID_BOOL = 0,
  BRAID_INT8 = 1,
  BRAID_UINT8 = 2,
  BRAID_INT32 = 3,
  BRAID_UINT32 = 4,
  BRAID_INT64 = 5,
  BRAID_UINT64 = 6,
  BRAID_FLOAT16 = 7,
  BRAID_BFLOAT16 = 8,
  BRAID_FLOAT32 = 9,
  BRAID_FLOAT64 = 10,
  BRAID_FLOAT8_E4M3 = 11,                ///< OCP FP8 E4M3 "fn" (no infinities, max 448); reductions as types.hpp says
  BRAID_FLOAT8_E5M2 = 12,                ///< FP8 E5M2 (IEEE-like, max finite 57344)
  BRAID_NUM_DATATYPES = 13,              ///< not a type: the number of types
  BRAID_DATATYPE_ENUM_MAX_ = 0x7fffffff  ///< not a type: keeps the enum int-sized with every compiler
} braid_datatype_t;

/// Reduction operator; the values equal braid::ReduceKind's and the semantics are those of types.hpp
/// (integer sum/prod wrap, integer avg truncates toward zero, bitwise ops on integers and bool only).
typedef enum braid_redop {
  BRAID_SUM = 0,
  BRAID_PROD = 1,
  BRAID_MIN = 2,
  BRAID_MAX = 3,
  BRAID_AVG = 4,
  BRAID_PREMUL_SUM = 5,  ///< needs a scale: only through braid_allreduce_premul
  BRAID_BAND = 6,
  BRAID_BOR = 7,
  BRAID_BXOR = 8,
  BRAID_NUM_REDOPS = 9,               ///< not an operator: the number of operators
  BRAID_REDOP_ENUM_MAX_ = 0x7fffffff  ///< not an operator: keeps the enum int-sized with every compiler
} braid_redop_t;

/// A communicator: opaque; made by braid_comm_init or braid_comm_init_env, freed by braid_comm_destroy.
typedef struct braid_comm* braid_comm_t;

#define BRAID_UNIQUE_ID_BYTES 128

/// 128 opaque bytes that let every rank find and authenticate to the rendezvous (as ncclUniqueId).
typedef struct braid_unique_id {
  unsigned char bytes[BRAID_UNIQUE_ID_BYTES];
} braid_unique_id_t;

/// One point-to-point operation of braid_group.
typedef struct braid_p2p_op {
  int is_recv;  ///< 0: send `buffer` to `peer`; non-zero: receive from `peer` into `buffer`
  int peer;
  void* buffer;  ///< read for a send, written for a receive
  size_t count;  ///< elements of `type`
  braid_datatype_t type;
  int tag;  ///< messages between a pair with the same tag arrive in order
} braid_p2p_op_t;

/// The message of the last call that failed on this thread ("" if none has): the error code, the rank, peer,
/// operation and sequence number where known, and what went wrong. A successful call leaves it unchanged. The
/// pointer stays valid until the next braid call on this thread.
const char* braid_last_error(void);
/// "success", "invalid argument", "timeout", ... for a result; "unknown result" for any other value.
const char* braid_result_string(braid_result_t result);

// ---- Communicators ----

/// Makes a fresh id and starts its rendezvous server in this process, which must keep running until every rank
/// has created its communicator. Call it in one process and pass the bytes to every rank.
braid_result_t braid_get_unique_id(braid_unique_id_t* id);
/// Joins rank `rank` of `size` to the communicator of `id`; blocks until every rank has joined or BRAID_TIMEOUT
/// passes. On failure *comm is set to NULL.
braid_result_t braid_comm_init(braid_comm_t* comm, const braid_unique_id_t* id, int rank, int size);
/// Joins the communicator the launcher describes: BRAID_RANK, BRAID_WORLD_SIZE, BRAID_ROOT_ADDR=HOST:PORT (rank 0
/// listens there), optional BRAID_LOCAL_RANK and BRAID_TOKEN. On failure *comm is set to NULL.
braid_result_t braid_comm_init_env(braid_comm_t* comm);
/// Frees a communicator; NULL is accepted and does nothing. No call on it may be running. The handle stays
/// invalid: a later call with it, a second destroy included, fails with BRAID_ERR_INVALID_ARGUMENT.
braid_result_t braid_comm_destroy(braid_comm_t comm);
braid_result_t braid_comm_rank(braid_comm_t comm, int* rank);
braid_result_t braid_comm_size(braid_comm_t comm, int* size);
/// Collective over `comm`: ranks passing the same color >= 0 form *newcomm, ranked by (key, rank in comm); a
/// negative color (BRAID_NO_COLOR) takes part and gets NULL. Its own sequence numbers; may outlive comm.
#define BRAID_NO_COLOR (-1)
braid_result_t braid_comm_split(braid_comm_t comm, int color, int key, braid_comm_t* newcomm);
/// Called by the `nranks` ranks listed only, each with the same list (its order gives the new ranks).
braid_result_t braid_comm_subgroup(braid_comm_t comm, const int* ranks, int nranks, braid_comm_t* newcomm);
/// From any thread, never blocking: this rank's calls on comm end with BRAID_ERR_ABORTED, its peers lose it. The
/// handle must still be destroyed.
braid_result_t braid_comm_abort(braid_comm_t comm);
/// The CUDA stream (a cudaStream_t, passed as void*) that later calls through this handle are ordered on; NULL (the
/// default) is the default stream for GPU buffers and no stream for host buffers (see CallOptions::stream in
/// braid.hpp). Any thread; calls already made keep their stream.
braid_result_t braid_comm_set_stream(braid_comm_t comm, void* stream);
/// After BRAID_ERR_PEER_LOST, every survivor calls it: *newcomm joins the survivors, ranked in their old order.
braid_result_t braid_comm_shrink(braid_comm_t comm, braid_comm_t* newcomm);

// ---- Collectives ----
// `count` is in elements of `type`. send == recv is in place where braid.hpp allows it. Every rank must make the
// same call with the same type, op, counts and root; braid returns BRAID_ERR_MISMATCH when they disagree.

/// recv[i] = op over ranks of send[i]. BRAID_PREMUL_SUM is refused here: use braid_allreduce_premul.
braid_result_t braid_allreduce(const void* send, void* recv, size_t count, braid_datatype_t type, braid_redop_t op,
                               braid_comm_t comm);
/// recv[i] = sum over ranks of (that rank's scale * send[i]); ranks may pass different scales. On integer types
/// the scale must be integral.
braid_result_t braid_allreduce_premul(const void* send, void* recv, size_t count, braid_datatype_t type, double scale,
                                      braid_comm_t comm);
/// root's buf to every rank.
braid_result_t braid_broadcast(void* buf, size_t count, braid_datatype_t type, int root, braid_comm_t comm);
/// recv (significant at root only) = op over ranks of send. BRAID_PREMUL_SUM is refused.
braid_result_t braid_reduce(const void* send, void* recv, size_t count, braid_datatype_t type, braid_redop_t op,
                            int root, braid_comm_t comm);
/// recv = concatenation of every rank's send (count elements each).
braid_result_t braid_allgather(const void* send, void* recv, size_t count, braid_datatype_t type, braid_comm_t comm);
/// Per-rank counts: rank r's send_count elements land at recv + displs[r]. recv_counts and displs hold one entry
/// per rank.
braid_result_t braid_allgatherv(const void* send, size_t send_count, void* recv, const size_t* recv_counts,
                                const size_t* displs, braid_datatype_t type, braid_comm_t comm);
/// send holds size blocks of recv_count elements; rank r receives block r reduced over ranks. BRAID_PREMUL_SUM is
/// refused.
braid_result_t braid_reduce_scatter(const void* send, void* recv, size_t recv_count, braid_datatype_t type,
                                    braid_redop_t op, braid_comm_t comm);
/// send block j (count elements) goes to rank j; recv block j comes from rank j.
braid_result_t braid_alltoall(const void* send, void* recv, size_t count, braid_datatype_t type, braid_comm_t comm);
/// Per-peer counts and displacements in elements; each array holds one entry per rank.
braid_result_t braid_alltoallv(const void* send, const size_t* send_counts, const size_t* send_displs, void* recv,
                               const size_t* recv_counts, const size_t* recv_displs, braid_datatype_t type,
                               braid_comm_t comm);
/// root receives every rank's send (count elements each) in rank order.
braid_result_t braid_gather(const void* send, void* recv, size_t count, braid_datatype_t type, int root,
                            braid_comm_t comm);
/// root's send block r (count elements) goes to rank r.
braid_result_t braid_scatter(const void* send, void* recv, size_t count, braid_datatype_t type, int root,
                             braid_comm_t comm);
braid_result_t braid_barrier(braid_comm_t comm);

/// Registers GPU memory [buf, buf + bytes) with the communicator (as ncclCommRegister; collective, in call order):
/// large allreduce, allgather and reduce_scatter calls whose buffers are registered on every rank read peers'
/// buffers in place. *handle receives the registration for braid_comm_deregister (0: registering changed nothing).
braid_result_t braid_comm_register(braid_comm_t comm, void* buf, size_t bytes, uint64_t* handle);
/// Collective: forgets a registration on every rank.
braid_result_t braid_comm_deregister(braid_comm_t comm, uint64_t handle);

// ---- Point-to-point ----

/// The peer of a receive that takes the first message with its tag from any rank (MPI_ANY_SOURCE); host buffers only.
#define BRAID_ANY_SOURCE (-1)

/// Tagged send and receive; messages between a pair with the same tag arrive in order. braid_recv and braid_group
/// take BRAID_ANY_SOURCE as a receive's peer.
braid_result_t braid_send(const void* buf, size_t count, braid_datatype_t type, int peer, int tag, braid_comm_t comm);
braid_result_t braid_recv(void* buf, size_t count, braid_datatype_t type, int peer, int tag, braid_comm_t comm);
/// braid_recv that also says where the message came from: `*source` (when not NULL) is the sender's rank, which for
/// BRAID_ANY_SOURCE is known only once the call returns BRAID_SUCCESS.
braid_result_t braid_recv_from(void* buf, size_t count, braid_datatype_t type, int peer, int tag, int* source,
                               braid_comm_t comm);
/// Posts all `nops` sends and receives together and completes them without deadlock in any order (as
/// ncclGroupStart/End). ops may be NULL when nops is 0.
braid_result_t braid_group(braid_comm_t comm, const braid_p2p_op_t* ops, int nops);
/// braid_group that also says where each receive's message came from (MPI_Status's MPI_SOURCE): once the call returns
/// BRAID_SUCCESS, sources[i] is the sender of ops[i] when it is a receive (for BRAID_ANY_SOURCE, the rank whose message
/// it took) and ops[i].peer when it is a send. `sources` holds nops ints, or is NULL (as braid_group).
braid_result_t braid_group_from(braid_comm_t comm, const braid_p2p_op_t* ops, int nops, int* sources);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // BRAID_BRAID_H_
