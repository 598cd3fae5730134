/* A one-rank stand-in for the MPI library, for a build without MPI (-DTPB_MPI=OFF): the world is
 * this process alone, every collective completes at once with the rank's own data, so tpbench
 * runs without mpirun on one device, as nccl-tests does when built with MPI=0. Only what tpbench
 * calls is here; a point-to-point call has no peer in a world of one and ends the process with a
 * message naming the call. The types are plain integers: a datatype carries its size, so a copy
 * needs no table. */
#ifndef TPB_MPI_ONE_RANK_H
#define TPB_MPI_ONE_RANK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef int MPI_Comm;
typedef int MPI_Datatype;
typedef int MPI_Op;
typedef int MPI_Request;
typedef int MPI_Win;
typedef int MPI_Info;
typedef ptrdiff_t MPI_Aint;
typedef struct {
  int MPI_SOURCE, MPI_TAG, MPI_ERROR;
} MPI_Status;

#define TPB_MPI_ONE_RANK 1
#define MPI_SUCCESS 0
#define MPI_ERR_OTHER 15
#define MPI_COMM_NULL 0
#define MPI_COMM_WORLD 1
#define MPI_COMM_SELF 2
#define MPI_REQUEST_NULL 0
#define MPI_WIN_NULL 0
#define MPI_INFO_NULL 0
#define MPI_STATUS_IGNORE ((MPI_Status*)0)
#define MPI_IN_PLACE ((void*)1)
#define MPI_THREAD_SINGLE 0
#define MPI_THREAD_FUNNELED 1
#define MPI_THREAD_SERIALIZED 2
#define MPI_THREAD_MULTIPLE 3
#define MPI_COMM_TYPE_SHARED 1
#define MPI_MAX_LIBRARY_VERSION_STRING 256
#define MPI_MAX_ERROR_STRING 256
#define MPI_MAX_PROCESSOR_NAME 256

/* A datatype's value is its size in bytes times 16 plus a kind, so each is distinct. */
#define MPI_CHAR (1 * 16 + 0)
#define MPI_BYTE (1 * 16 + 1)
#define MPI_INT (4 * 16 + 0)
#define MPI_FLOAT (4 * 16 + 1)
#define MPI_DOUBLE (8 * 16 + 0)
#define MPI_LONG_LONG (8 * 16 + 1)
#define MPI_INT64_T (8 * 16 + 2)
#define MPI_UINT64_T (8 * 16 + 3)

#define MPI_SUM 1
#define MPI_MAX 2
#define MPI_MIN 3

int MPI_Init(int* argc, char*** argv);
int MPI_Init_thread(int* argc, char*** argv, int required, int* provided);
int MPI_Query_thread(int* provided);
int MPI_Finalize(void);
int MPI_Finalized(int* flag);
int MPI_Abort(MPI_Comm comm, int errorcode);
double MPI_Wtime(void);
int MPI_Get_library_version(char* version, int* len);
int MPI_Error_string(int code, char* text, int* len);

int MPI_Comm_rank(MPI_Comm comm, int* rank);
int MPI_Comm_size(MPI_Comm comm, int* size);
int MPI_Comm_dup(MPI_Comm comm, MPI_Comm* out);
int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm* out);
int MPI_Comm_split_type(MPI_Comm comm, int type, int key, MPI_Info info, MPI_Comm* out);
int MPI_Comm_free(MPI_Comm* comm);

int MPI_Barrier(MPI_Comm comm);
int MPI_Bcast(void* buf, int count, MPI_Datatype t, int root, MPI_Comm comm);
int MPI_Allreduce(const void* send, void* recv, int count, MPI_Datatype t, MPI_Op op,
                  MPI_Comm comm);
int MPI_Reduce(const void* send, void* recv, int count, MPI_Datatype t, MPI_Op op, int root,
               MPI_Comm comm);
int MPI_Reduce_scatter_block(const void* send, void* recv, int count, MPI_Datatype t, MPI_Op op,
                             MPI_Comm comm);
int MPI_Allgather(const void* send, int scount, MPI_Datatype st, void* recv, int rcount,
                  MPI_Datatype rt, MPI_Comm comm);
int MPI_Gather(const void* send, int scount, MPI_Datatype st, void* recv, int rcount,
               MPI_Datatype rt, int root, MPI_Comm comm);
int MPI_Gatherv(const void* send, int scount, MPI_Datatype st, void* recv, const int* rcounts,
                const int* displs, MPI_Datatype rt, int root, MPI_Comm comm);

int MPI_Ibarrier(MPI_Comm comm, MPI_Request* req);
int MPI_Ibcast(void* buf, int count, MPI_Datatype t, int root, MPI_Comm comm, MPI_Request* req);
int MPI_Iallreduce(const void* send, void* recv, int count, MPI_Datatype t, MPI_Op op,
                   MPI_Comm comm, MPI_Request* req);
int MPI_Ireduce(const void* send, void* recv, int count, MPI_Datatype t, MPI_Op op, int root,
                MPI_Comm comm, MPI_Request* req);
int MPI_Ireduce_scatter_block(const void* send, void* recv, int count, MPI_Datatype t, MPI_Op op,
                              MPI_Comm comm, MPI_Request* req);
int MPI_Iallgather(const void* send, int scount, MPI_Datatype st, void* recv, int rcount,
                   MPI_Datatype rt, MPI_Comm comm, MPI_Request* req);
int MPI_Test(MPI_Request* req, int* flag, MPI_Status* status);
int MPI_Wait(MPI_Request* req, MPI_Status* status);

int MPI_Send(const void* buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm comm);
int MPI_Recv(void* buf, int count, MPI_Datatype t, int source, int tag, MPI_Comm comm,
             MPI_Status* status);

int MPI_Win_allocate_shared(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void* base,
                            MPI_Win* win);
int MPI_Win_shared_query(MPI_Win win, int rank, MPI_Aint* size, int* disp_unit, void* base);
int MPI_Win_free(MPI_Win* win);

#ifdef __cplusplus
}
#endif

#endif /* TPB_MPI_ONE_RANK_H */
