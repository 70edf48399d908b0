#include "transport/shm/shm_segment.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "base/error.hpp"

namespace braid::transport {

namespace {

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

std::byte* mapShared(int fd, std::size_t bytes, const std::string& name) {
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  if (p == MAP_FAILED) failErrno("mmap of shared memory " + name, errno);
  return static_cast<std::byte*>(p);
}

}  // namespace

ShmSegment ShmSegment::create(const std::string& name, std::size_t bytes) {
  Fd fd(::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600));
  if (fd.get() < 0) failErrno("shm_open(" + name + ")", errno);
  ShmSegment seg;
  seg.name_ = name;
  seg.owner_ = true;
  seg.linked_ = true;
  // posix_fallocate reserves the pages now: a too-small /dev/shm is an error here rather than a SIGBUS later.
  if (const int err = ::posix_fallocate(fd.get(), 0, static_cast<off_t>(bytes)); err != 0) {
    struct statvfs fs {};
    const bool known = ::statvfs("/dev/shm", &fs) == 0;
    seg.unlink();
    if (err == ENOSPC || err == EFBIG) {
      fail(ErrorCode::kUnavailable, {}, "/dev/shm cannot hold ", bytes, " more bytes",
           known ? strCat(" (", static_cast<unsigned long long>(fs.f_bavail) * fs.f_frsize, " free)") : "",
           "; in a container raise it (docker run --shm-size=1g), or shrink the regions: a lower BRAID_SHM_SLOT_BYTES "
           "or BRAID_SHM_P2P_BYTES, or BRAID_SHM_THREADS=1 where it is set above 1 (the slots grow with a rank's "
           "threads; auto already takes fewer where /dev/shm is small)");
    }
    failErrno("posix_fallocate(" + name + ")", err);
  }
  seg.data_ = mapShared(fd.get(), bytes, name);
  seg.bytes_ = bytes;
  // MAP_POPULATE maps the pages; writing them makes sure they are ours and the TLB is warm.
  std::memset(seg.data_, 0, bytes);
  return seg;
}

ShmSegment ShmSegment::open(const std::string& name, std::size_t bytes) {
  Fd fd(::shm_open(name.c_str(), O_RDWR, 0600));
  if (fd.get() < 0) failErrno("shm_open(" + name + ") of a peer's segment", errno);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) failErrno("fstat(" + name + ")", errno);
  if (static_cast<std::size_t>(st.st_size) != bytes) {
    fail(ErrorCode::kMismatch, {}, "shared memory ", name, " has ", st.st_size, " bytes, expected ", bytes,
         " (do all ranks use the same BRAID_SHM_* settings?)");
  }
  ShmSegment seg;
  seg.name_ = name;
  seg.data_ = mapShared(fd.get(), bytes, name);
  seg.bytes_ = bytes;
  return seg;
}

ShmSegment::ShmSegment(ShmSegment&& other) noexcept { *this = std::move(other); }

ShmSegment& ShmSegment::operator=(ShmSegment&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    name_ = std::move(other.name_);
    owner_ = std::exchange(other.owner_, false);
    linked_ = std::exchange(other.linked_, false);
  }
  return *this;
}

ShmSegment::~ShmSegment() { release(); }

void ShmSegment::unlink() {
  if (owner_ && linked_) {
    ::shm_unlink(name_.c_str());
    linked_ = false;
  }
}

void ShmSegment::release() noexcept {
  unlink();
  if (data_) ::munmap(data_, bytes_);
  data_ = nullptr;
  bytes_ = 0;
}

}  // namespace braid::transport
