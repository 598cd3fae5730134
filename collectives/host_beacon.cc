// UDP beacon: addresses are swapped once over MPI, then datagrams go to every IPv4 address a
// peer's host has up (not loopback), since which of them routes to this host is not known here;
// a datagram to an unreachable address is lost, which costs nothing.
#include "collectives/host_beacon.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <random>

#include "base/mpi_check.h"

namespace tpb {

namespace {

constexpr int kMaxAddrs = 8;
constexpr uint32_t kMagic = 0x54504231;  // "TPB1"

// What each rank tells the others once, over MPI.
struct Contact {
  uint16_t port = 0;
  int32_t n_addrs = 0;
  uint32_t addrs[kMaxAddrs] = {};  // network byte order
  char host[64] = {};
};

struct Datagram {
  uint32_t magic = kMagic;
  int32_t rank = 0;
  uint64_t token = 0;
  BeaconState state;
};

using Clock = std::chrono::steady_clock;

int open_socket(uint16_t& port) {
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  socklen_t len = sizeof a;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    close(fd);
    return -1;
  }
  port = ntohs(a.sin_port);
  return fd;
}

Contact my_contact(int fd, uint16_t port) {
  Contact c;
  gethostname(c.host, sizeof c.host - 1);
  if (fd < 0) return c;  // no socket: peers will never hear from this rank, and say so
  c.port = port;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return c;
  for (ifaddrs* i = list; i && c.n_addrs < kMaxAddrs; i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET) continue;
    if (!(i->ifa_flags & IFF_UP) || (i->ifa_flags & IFF_LOOPBACK)) continue;
    c.addrs[c.n_addrs++] = reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr;
  }
  freeifaddrs(list);
  return c;
}

}  // namespace

struct HostBeacon::Peer {
  int rank = 0;
  Contact contact;
  bool heard = false;
  Clock::time_point last;
  BeaconState state;
};

HostBeacon::HostBeacon(MPI_Comm world, const std::vector<int>& peers,
                       std::function<BeaconState()> own, double period_s)
    : period_s_(period_s), own_(std::move(own)) {
  int size = 1;
  TPB_MPI_CHECK(MPI_Comm_rank(world, &world_rank_));
  TPB_MPI_CHECK(MPI_Comm_size(world, &size));
  uint16_t port = 0;
  fd_ = peers.empty() ? -1 : open_socket(port);
  const Contact mine = my_contact(fd_, port);
  std::vector<Contact> all(static_cast<std::size_t>(size));
  TPB_MPI_CHECK(
      MPI_Allgather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE, world));
  if (world_rank_ == 0) token_ = std::random_device{}() | (uint64_t{std::random_device{}()} << 32);
  TPB_MPI_CHECK(MPI_Bcast(&token_, 1, MPI_UINT64_T, 0, world));
  for (int r : peers) peers_.push_back({r, all[static_cast<std::size_t>(r)], false, {}, {}});
  if (fd_ >= 0)
    ticker_ =
        std::make_unique<SignalTicker>(SignalTicker::Line::beacon, period_s_, [this] { tick(); });
}

HostBeacon::~HostBeacon() {
  ticker_.reset();  // first: no tick may run on a closed socket
  if (fd_ >= 0) close(fd_);
}

void HostBeacon::send_all(const BeaconState& s) const {
  Datagram d;
  d.rank = world_rank_;
  d.token = token_;
  d.state = s;
  for (const Peer& p : peers_) {
    for (int i = 0; i < p.contact.n_addrs; ++i) {
      sockaddr_in to{};
      to.sin_family = AF_INET;
      to.sin_port = htons(p.contact.port);
      to.sin_addr.s_addr = p.contact.addrs[i];
      // Errors (a link that is down, no route) are the condition being watched for: ignored.
      (void)sendto(fd_, &d, sizeof d, MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&to), sizeof to);
    }
  }
}

void HostBeacon::receive_all() {
  Datagram d;
  while (recv(fd_, &d, sizeof d, MSG_DONTWAIT) == static_cast<ssize_t>(sizeof d)) {
    if (d.magic != kMagic || d.token != token_) continue;
    for (Peer& p : peers_)
      if (p.rank == d.rank && (!p.heard || d.state.seq >= p.state.seq)) {
        p.heard = true;
        p.last = Clock::now();  // clock_gettime: safe in a signal handler
        p.state = d.state;
      }
  }
}

// Every period: what arrived since the last tick, then this rank's own word. A rank
// descheduled for a while sends once when it runs again, not a burst to catch up.
void HostBeacon::tick() {
  receive_all();
  send_all(own_());
}

std::optional<HeardFrom> HostBeacon::heard_from(int world_rank) const {
  const SignalTicker::Hold hold(SignalTicker::Line::beacon);
  for (const Peer& p : peers_) {
    if (p.rank != world_rank) continue;
    HeardFrom h;
    h.host = p.contact.host;
    h.heard = p.heard;
    if (p.heard) h.age_s = std::chrono::duration<double>(Clock::now() - p.last).count();
    h.state = p.state;
    return h;
  }
  return std::nullopt;
}

}  // namespace tpb
