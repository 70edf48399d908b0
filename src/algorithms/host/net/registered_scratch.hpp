// A buffer the network engine reuses from call to call (its scratch, workspace and bfloat16 wire), registered with
// the transport as one region (docs/NETWORK.md) and registered again only when it grows: so an RDMA transport could
// move the messages posted from and into it without a copy.
#pragma once

#include <cstddef>
#include <vector>

#include "transport/net_transport.hpp"

namespace braid::host {

class RegisteredScratch {
 public:
  RegisteredScratch() = default;
  ~RegisteredScratch() {
    if (net_ != nullptr) net_->deregisterRegion(region_);
  }
  RegisteredScratch(const RegisteredScratch&) = delete;
  RegisteredScratch& operator=(const RegisteredScratch&) = delete;

  /// At least `bytes`, keeping what it held; 16-byte aligned (operator new's alignment).
  std::byte* ensure(transport::NetTransport& net, std::size_t bytes) {
    if (bytes > data_.size()) {
      net_ = &net;
      net.deregisterRegion(region_);
      data_.resize(bytes);
      region_ = net.registerRegion(data_.data(), data_.size(), transport::RegionMemory::kHost);
    }
    return data_.data();
  }
  std::size_t size() const { return data_.size(); }

 private:
  std::vector<std::byte> data_;
  transport::NetTransport* net_ = nullptr;  // outlives this: the engine holding both made it first
  const transport::Region* region_ = nullptr;
};

}  // namespace braid::host
