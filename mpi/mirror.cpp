#include "mirror.hpp"

#include <memory>
#include <mutex>
#include <set>

namespace braid::mpi {

namespace {

std::mutex mu;
int commKey = MPI_KEYVAL_INVALID;         // the mirror, on the MPI communicator it mirrors
int finalizeKey = MPI_KEYVAL_INVALID;     // on MPI_COMM_SELF: MPI deletes it first thing in MPI_Finalize
std::set<Communicator*>* live = nullptr;  // mirrors not yet deleted

// Open MPI deletes MPI_COMM_WORLD's attributes in MPI_Finalize after MPI_COMM_SELF's, whose callback (deleteAll)
// has already destroyed every mirror left: only a mirror still live is destroyed here.
int deleteMirror(MPI_Comm, int, void* attribute, void*) {
  auto* comm = static_cast<Communicator*>(attribute);
  {
    std::lock_guard lock(mu);
    if (live == nullptr || live->erase(comm) == 0) return MPI_SUCCESS;
  }
  delete comm;
  return MPI_SUCCESS;
}

// MPI_Finalize deletes MPI_COMM_SELF's attributes before anything else, while MPI still works; the mirrors of
// communicators never freed (MPI_COMM_WORLD) go then.
int deleteAll(MPI_Comm, int, void*, void*) {
  std::set<Communicator*> left;
  {
    std::lock_guard lock(mu);
    if (live != nullptr) left.swap(*live);
  }
  // Every process is in MPI_Finalize (it is collective): none leaves while a peer still tears its mirrors down.
  PMPI_Barrier(MPI_COMM_WORLD);
  for (Communicator* comm : left) delete comm;
  PMPI_Barrier(MPI_COMM_WORLD);
  return MPI_SUCCESS;
}

}  // namespace

Communicator& mirrorOf(MPI_Comm comm) {
  {
    std::lock_guard lock(mu);
    if (commKey == MPI_KEYVAL_INVALID) {
      PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, deleteMirror, &commKey, nullptr);
      PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, deleteAll, &finalizeKey, nullptr);
      PMPI_Comm_set_attr(MPI_COMM_SELF, finalizeKey, nullptr);
      live = new std::set<Communicator*>();  // lives as long as the process: deleteAll may run at exit
    }
  }
  void* attribute = nullptr;
  int found = 0;
  PMPI_Comm_get_attr(comm, commKey, &attribute, &found);
  if (found != 0) return *static_cast<Communicator*>(attribute);

  int rank = 0;
  int size = 0;
  PMPI_Comm_rank(comm, &rank);
  PMPI_Comm_size(comm, &size);
  UniqueId id{};
  if (rank == 0) id = Communicator::uniqueId();
  PMPI_Bcast(&id, sizeof id, MPI_BYTE, 0, comm);
  std::unique_ptr<Communicator> made = Communicator::create(id, rank, size);
  Communicator* mirror = made.release();
  {
    std::lock_guard lock(mu);
    live->insert(mirror);
  }
  PMPI_Comm_set_attr(comm, commKey, mirror);
  return *mirror;
}

}  // namespace braid::mpi
