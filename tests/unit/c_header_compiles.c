/* braid.h from plain C: this file is compiled with -std=c99 -Wall -Wextra -pedantic -Werror, so the header must be
 * strict C99. c_abi_test.cpp calls the function below, so the calls also link and run. */
#include <stddef.h>
#include <string.h>

#include "braid/braid.h"

int braid_c_header_smoke(braid_unique_id_t* id);

/* Creates a communicator of one rank from *id (made here) and runs a few calls on it. Returns 0 on success, else
 * the number of the step that failed. The caller releases the id's rendezvous server. */
int braid_c_header_smoke(braid_unique_id_t* id) {
  braid_comm_t comm = NULL;
  int rank = -1;
  int size = -1;
  int in[4] = {1, 2, 3, 4};
  int out[4] = {0, 0, 0, 0};
  double values[2] = {1.5, -2.0};
  unsigned char e4m3[2] = {0x38, 0xbc}; /* 1.0 and -1.5 in float8 e4m3 */
  braid_p2p_op_t ops[2];
  size_t i;
  int failed = 0;
  int source = -1;
  int sources[2];

  if (braid_get_unique_id(id) != BRAID_SUCCESS) return 1;
  if (braid_comm_init(&comm, id, 0, 1) != BRAID_SUCCESS || comm == NULL) return 2;
  if (braid_comm_rank(comm, &rank) != BRAID_SUCCESS || rank != 0) failed = 3;
  if (!failed && (braid_comm_size(comm, &size) != BRAID_SUCCESS || size != 1)) failed = 4;
  if (!failed && braid_allreduce(in, out, 4, BRAID_INT32, BRAID_SUM, comm) != BRAID_SUCCESS) failed = 5;
  for (i = 0; !failed && i < 4; ++i) {
    if (out[i] != in[i]) failed = 6;
  }
  if (!failed && braid_allreduce_premul(values, values, 2, BRAID_FLOAT64, 4.0, comm) != BRAID_SUCCESS) failed = 7;
  if (!failed && (values[0] != 6.0 || values[1] != -8.0)) failed = 8;
  if (!failed && braid_allreduce_premul(e4m3, e4m3, 2, BRAID_FLOAT8_E4M3, 2.0, comm) != BRAID_SUCCESS) failed = 14;
  if (!failed && (e4m3[0] != 0x40 || e4m3[1] != 0xc4)) failed = 15; /* 2.0 and -3.0 */
  /* A group of zero operations, then one whose datatype is no braid_datatype_t. */
  if (!failed && braid_group(comm, NULL, 0) != BRAID_SUCCESS) failed = 9;
  memset(ops, 0, sizeof ops);
  ops[0].is_recv = 1;
  ops[0].buffer = out;
  ops[0].count = 1;
  ops[0].type = (braid_datatype_t)42;
  if (!failed && braid_group(comm, ops, 1) != BRAID_ERR_INVALID_ARGUMENT) failed = 10;
  if (!failed && strstr(braid_last_error(), "datatype 42") == NULL) failed = 11;
  if (!failed && strcmp(braid_result_string(BRAID_ERR_TIMEOUT), "timeout") != 0) failed = 12;
  /* A message to itself, taken by a receive from any source that names its sender. */
  if (!failed && braid_send(in, 4, BRAID_INT32, 0, 3, comm) != BRAID_SUCCESS) failed = 16;
  if (!failed && braid_recv_from(out, 4, BRAID_INT32, BRAID_ANY_SOURCE, 3, &source, comm) != BRAID_SUCCESS) failed = 17;
  if (!failed && (source != 0 || out[3] != in[3])) failed = 18;
  /* The same in one group: the receive's entry of sources names the sender, the send's its peer. */
  memset(ops, 0, sizeof ops);
  memset(out, 0, sizeof out);
  ops[0].buffer = in;
  ops[0].count = 4;
  ops[0].type = BRAID_INT32;
  ops[0].tag = 5;
  ops[1] = ops[0];
  ops[1].is_recv = 1;
  ops[1].peer = BRAID_ANY_SOURCE;
  ops[1].buffer = out;
  sources[0] = sources[1] = -9;
  if (!failed && braid_group_from(comm, ops, 2, sources) != BRAID_SUCCESS) failed = 19;
  if (!failed && (sources[0] != 0 || sources[1] != 0 || out[2] != in[2])) failed = 20;
  if (braid_comm_destroy(comm) != BRAID_SUCCESS && !failed) failed = 13;
  return failed;
}
