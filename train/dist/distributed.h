// rpb/train/dist/distributed.h: rpb's processes past one machine. The one module that talks to MPI (OpenMPI from
// Debian): it alone includes mpi.h, and without MPI at build time (cmake -DRPB_MPI=OFF, or no libopenmpi-dev) it
// is a single process with the same interface.
//
// MPI starts only when the process was launched by an MPI launcher (mpirun / mpiexec / srun set
// OMPI_COMM_WORLD_SIZE, PMIX_RANK or PMI_SIZE); a plain `build/rpb ...` never touches MPI and is rank 0 of 1.
// Every call below is collective over all ranks (MPI_COMM_WORLD) unless it says otherwise, and throws rpb::Error
// naming the MPI call and MPI's message when it fails. A process that fails alone ends the whole job with
// abort() (cli/main.cpp does), so no rank waits forever in a collective the failed one will not reach.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace rpb::dist {

/// Initializes MPI for the lifetime of the object when the environment says an MPI launcher started the process
/// (MPI_THREAD_FUNNELED: only the main thread calls MPI; the thread pool's workers never do), and finalizes it on
/// destruction. Also sizes rpb's thread pool for the ranks sharing this node when RPB_NUM_THREADS is not set:
/// max(1, hardware threads / ranks on the node). One per process (cli/main.cpp).
class Session {
 public:
  Session(int& argc, char**& argv);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
};

/// True when rpb was built with MPI.
bool built_with_mpi();
/// The MPI library's name and version ("Open MPI v4.1.4, ..."), or "" when built without MPI.
std::string library_version();
/// True when MPI is running (a Session started it).
bool initialized();
/// This process's rank in [0, size()) and the number of processes; 0 and 1 without MPI.
int rank();
int size();
/// Ranks on this node (MPI_COMM_TYPE_SHARED); 1 without MPI.
int local_size();
/// The threads a rank uses by default: max(1, hardware threads / local_size()).
int default_threads();

/// In-place sums over all ranks: every rank ends with the same values.
void allreduce_sum(float* data, std::size_t n);
void allreduce_sum(double* data, std::size_t n);
/// In-place maximum over all ranks.
void allreduce_max(int64_t* data, std::size_t n);
/// Rank `root`'s bytes to every rank (`bytes` must be the same on all).
void broadcast(void* data, std::size_t bytes, int root = 0);
/// Rank `root`'s string to every rank (any length).
void broadcast(std::string& s, int root = 0);
void barrier();

/// Point to point, for the sweeps' work queue (train/sweep/sweep.cpp): sends `values` to rank `to` with `tag`.
void send(const std::vector<int64_t>& values, int to, int tag);
/// Receives a message with `tag` from any rank into `values` (its length is the message's); returns the sender.
int receive(std::vector<int64_t>& values, int tag);
/// True when a message with `tag` from any rank is waiting (MPI_Iprobe: never blocks).
bool message_waiting(int tag);
/// Sends a string to rank `to` / receives one from rank `from` (length first, then the bytes).
void send(const std::string& s, int to, int tag);
void receive(std::string& s, int from, int tag);

/// Ends every rank of the job with `code` (MPI_Abort) after flushing this process's stderr; without MPI, or
/// before MPI started, std::exit(code). Called by a rank that failed, so no other rank hangs.
[[noreturn]] void abort(int code);

}  // namespace rpb::dist
