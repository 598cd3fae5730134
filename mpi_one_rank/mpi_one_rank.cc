// The one-rank MPI of mpi.h beside this file. A collective over a world of one is a copy of the
// rank's own contribution (or nothing, in place); a non-blocking one is complete when it
// returns. Shared windows are plain allocations, since the only process on the "node" is this
// one. No global state beyond what MPI itself keeps per process: the finalized flag, the next
// communicator id and the windows' memory.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

#include "mpi.h"

namespace {

struct State {
  std::mutex mu;
  bool finalized = false;
  int thread_level = 0;  // MPI_THREAD_SINGLE until MPI_Init_thread says otherwise
  int next_comm = 3;     // after MPI_COMM_NULL, MPI_COMM_WORLD and MPI_COMM_SELF
  int next_win = 1;
  std::map<int, void*> windows;
};

State& state() {
  static State s;  // MPI's own per-process state: the library is a process-wide resource
  return s;
}

std::size_t type_size(MPI_Datatype t) {
  return static_cast<std::size_t>(t) / 16;
}

void copy(const void* send, void* recv, int count, MPI_Datatype t) {
  if (send == MPI_IN_PLACE || send == recv || count <= 0) return;
  std::memcpy(recv, send, static_cast<std::size_t>(count) * type_size(t));
}

[[noreturn]] void no_peer(const char* call) {
  std::fprintf(stderr,
               "tpbench: %s: a build without MPI (-DTPB_MPI=OFF) has a world of one rank and "
               "no peer to talk to\n",
               call);
  std::fflush(stderr);
  std::_Exit(MPI_ERR_OTHER);
}

int new_comm(MPI_Comm* out) {
  std::lock_guard<std::mutex> lock(state().mu);
  *out = state().next_comm++;
  return MPI_SUCCESS;
}

int done(MPI_Request* req) {
  *req = MPI_REQUEST_NULL;
  return MPI_SUCCESS;
}

}  // namespace

extern "C" {

int MPI_Init(int*, char***) {
  return MPI_SUCCESS;
}

int MPI_Init_thread(int*, char***, int required, int* provided) {
  std::lock_guard<std::mutex> lock(state().mu);
  state().thread_level = required;
  *provided = required;
  return MPI_SUCCESS;
}

int MPI_Query_thread(int* provided) {
  std::lock_guard<std::mutex> lock(state().mu);
  *provided = state().thread_level;
  return MPI_SUCCESS;
}

int MPI_Finalize(void) {
  std::lock_guard<std::mutex> lock(state().mu);
  state().finalized = true;
  return MPI_SUCCESS;
}

int MPI_Finalized(int* flag) {
  std::lock_guard<std::mutex> lock(state().mu);
  *flag = state().finalized ? 1 : 0;
  return MPI_SUCCESS;
}

int MPI_Abort(MPI_Comm, int errorcode) {
  std::fflush(stdout);
  std::fflush(stderr);
  std::_Exit(errorcode);
}

double MPI_Wtime(void) {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

int MPI_Get_library_version(char* version, int* len) {
  *len = std::snprintf(version, MPI_MAX_LIBRARY_VERSION_STRING,
                       "none: a one-rank build without MPI (-DTPB_MPI=OFF)");
  return MPI_SUCCESS;
}

int MPI_Error_string(int code, char* text, int* len) {
  *len = std::snprintf(text, MPI_MAX_ERROR_STRING, "one-rank MPI stand-in error %d", code);
  return MPI_SUCCESS;
}

int MPI_Comm_rank(MPI_Comm, int* rank) {
  *rank = 0;
  return MPI_SUCCESS;
}

int MPI_Comm_size(MPI_Comm, int* size) {
  *size = 1;
  return MPI_SUCCESS;
}

int MPI_Comm_dup(MPI_Comm, MPI_Comm* out) {
  return new_comm(out);
}
int MPI_Comm_split(MPI_Comm, int, int, MPI_Comm* out) {
  return new_comm(out);
}
int MPI_Comm_split_type(MPI_Comm, int, int, MPI_Info, MPI_Comm* out) {
  return new_comm(out);
}

int MPI_Comm_free(MPI_Comm* comm) {
  *comm = MPI_COMM_NULL;
  return MPI_SUCCESS;
}

int MPI_Barrier(MPI_Comm) {
  return MPI_SUCCESS;
}
int MPI_Bcast(void*, int, MPI_Datatype, int, MPI_Comm) {
  return MPI_SUCCESS;
}

int MPI_Allreduce(const void* send, void* recv, int count, MPI_Datatype t, MPI_Op, MPI_Comm) {
  copy(send, recv, count, t);
  return MPI_SUCCESS;
}

int MPI_Reduce(const void* send, void* recv, int count, MPI_Datatype t, MPI_Op, int, MPI_Comm) {
  copy(send, recv, count, t);
  return MPI_SUCCESS;
}

int MPI_Reduce_scatter_block(const void* send, void* recv, int count, MPI_Datatype t, MPI_Op,
                             MPI_Comm) {
  copy(send, recv, count, t);
  return MPI_SUCCESS;
}

int MPI_Allgather(const void* send, int scount, MPI_Datatype st, void* recv, int, MPI_Datatype,
                  MPI_Comm) {
  copy(send, recv, scount, st);
  return MPI_SUCCESS;
}

int MPI_Gather(const void* send, int scount, MPI_Datatype st, void* recv, int, MPI_Datatype, int,
               MPI_Comm) {
  copy(send, recv, scount, st);
  return MPI_SUCCESS;
}

int MPI_Gatherv(const void* send, int scount, MPI_Datatype st, void* recv, const int*,
                const int* displs, MPI_Datatype rt, int, MPI_Comm) {
  if (send != MPI_IN_PLACE)
    copy(send, static_cast<char*>(recv) + static_cast<std::size_t>(displs[0]) * type_size(rt),
         scount, st);
  return MPI_SUCCESS;
}

int MPI_Ibarrier(MPI_Comm, MPI_Request* req) {
  return done(req);
}

int MPI_Ibcast(void*, int, MPI_Datatype, int, MPI_Comm, MPI_Request* req) {
  return done(req);
}

int MPI_Iallreduce(const void* send, void* recv, int count, MPI_Datatype t, MPI_Op, MPI_Comm,
                   MPI_Request* req) {
  copy(send, recv, count, t);
  return done(req);
}

int MPI_Ireduce(const void* send, void* recv, int count, MPI_Datatype t, MPI_Op, int, MPI_Comm,
                MPI_Request* req) {
  copy(send, recv, count, t);
  return done(req);
}

int MPI_Ireduce_scatter_block(const void* send, void* recv, int count, MPI_Datatype t, MPI_Op,
                              MPI_Comm, MPI_Request* req) {
  copy(send, recv, count, t);
  return done(req);
}

int MPI_Iallgather(const void* send, int scount, MPI_Datatype st, void* recv, int, MPI_Datatype,
                   MPI_Comm, MPI_Request* req) {
  copy(send, recv, scount, st);
  return done(req);
}

int MPI_Test(MPI_Request* req, int* flag, MPI_Status*) {
  *req = MPI_REQUEST_NULL;
  *flag = 1;
  return MPI_SUCCESS;
}

int MPI_Wait(MPI_Request* req, MPI_Status*) {
  return done(req);
}

int MPI_Send(const void*, int, MPI_Datatype, int, int, MPI_Comm) {
  no_peer("MPI_Send");
}

int MPI_Recv(void*, int, MPI_Datatype, int, int, MPI_Comm, MPI_Status*) {
  no_peer("MPI_Recv");
}

int MPI_Win_allocate_shared(MPI_Aint size, int, MPI_Info, MPI_Comm, void* base, MPI_Win* win) {
  void* p = std::calloc(1, size > 0 ? static_cast<std::size_t>(size) : 1);
  if (!p) return MPI_ERR_OTHER;
  *static_cast<void**>(base) = p;
  std::lock_guard<std::mutex> lock(state().mu);
  *win = state().next_win++;
  state().windows[*win] = p;
  return MPI_SUCCESS;
}

int MPI_Win_shared_query(MPI_Win win, int, MPI_Aint* size, int* disp_unit, void* base) {
  std::lock_guard<std::mutex> lock(state().mu);
  const auto it = state().windows.find(win);
  if (it == state().windows.end()) return MPI_ERR_OTHER;
  *size = 0;  // not read by tpbench: the slot count is its own
  *disp_unit = 1;
  *static_cast<void**>(base) = it->second;
  return MPI_SUCCESS;
}

int MPI_Win_free(MPI_Win* win) {
  std::lock_guard<std::mutex> lock(state().mu);
  const auto it = state().windows.find(*win);
  if (it != state().windows.end()) {
    std::free(it->second);
    state().windows.erase(it);
  }
  *win = MPI_WIN_NULL;
  return MPI_SUCCESS;
}

}  // extern "C"
