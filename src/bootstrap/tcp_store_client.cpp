// The TCP store's client: TcpStoreClient, one authenticated connection to a TcpStoreServer carrying one
// request at a time. Separate from the server, which only the rank hosting the store runs.
#include <array>
#include <cmath>
#include <vector>

#include "base/error.hpp"
#include "bootstrap/tcp_store.hpp"
#include "bootstrap/tcp_store_bytes.hpp"

namespace braid::bootstrap {

namespace {

using store_bytes::bytesOf;
using store_bytes::decodeU64;
using store_bytes::encodeI64;
using store_bytes::printable;

// The server answers a timed-out get when its wait ends; the client allows this much more before it gives up
// on the reply itself (network delay, a busy server).
constexpr double kReplyGraceSeconds = 5;

void readFrame(tcp::Socket& socket, Deadline deadline, const std::string& server, wire::Header* header,
               std::string* value, std::size_t maxValue) {
  std::array<std::byte, wire::kHeaderBytes> raw{};
  socket.recvAll(raw, deadline);
  std::string why;
  if (!wire::decodeHeader(raw, header, &why)) {
    fail(ErrorCode::kInvalidArgument, {}, server, " is not a braid store or speaks another version: ", why);
  }
  if (header->keyBytes != 0 || header->valueBytes > maxValue) {
    fail(ErrorCode::kInternal, {}, "store at ", server, " sent a malformed reply (key ", header->keyBytes,
         " bytes, value ", header->valueBytes, " bytes)");
  }
  value->resize(header->valueBytes);
  socket.recvAll(std::as_writable_bytes(std::span(value->data(), value->size())), deadline);
}

void writeFrame(tcp::Socket& socket, Deadline deadline, wire::Op op, const std::string& key, const std::string& value) {
  wire::Header h;
  h.op = op;
  h.keyBytes = static_cast<std::uint32_t>(key.size());
  h.valueBytes = static_cast<std::uint32_t>(value.size());
  const auto header = wire::encodeHeader(h);
  // One send for small frames (TCP_NODELAY is on: separate sends would be separate packets).
  std::vector<std::byte> head(header.begin(), header.end());
  const auto keyBytes = bytesOf(key);
  head.insert(head.end(), keyBytes.begin(), keyBytes.end());
  const bool inlineValue = value.size() <= (64 << 10);
  if (inlineValue) {
    const auto valueBytes = bytesOf(value);
    head.insert(head.end(), valueBytes.begin(), valueBytes.end());
  }
  socket.sendAll(head, deadline);
  if (!inlineValue) socket.sendAll(bytesOf(value), deadline);
}

void checkKey(const std::string& op, const std::string& key) {
  if (key.empty() || key.size() > wire::kMaxKeyBytes) {
    fail(ErrorCode::kInvalidArgument, {}, "store ", op, ": key of ", key.size(), " bytes (limit 1..",
         wire::kMaxKeyBytes, ")");
  }
}

}  // namespace

TcpStoreClient::TcpStoreClient(const tcp::Address& server, std::string token, Deadline connectDeadline,
                               double opTimeoutSeconds)
    : server_(server), opTimeoutSeconds_(opTimeoutSeconds) {
  socket_ = tcp::connectTo(server_, connectDeadline);
  handshake(token, connectDeadline);
}

void TcpStoreClient::handshake(const std::string& token, Deadline deadline) {
  const std::string name = server_.toString();
  wire::Header h;
  std::string payload;
  try {
    readFrame(socket_, deadline, name, &h, &payload, wire::kNonceBytes);
    if (h.op != wire::Op::kHello || payload.size() != wire::kNonceBytes) {
      fail(ErrorCode::kInvalidArgument, {}, name, " is not a braid store (unexpected greeting)");
    }
    const auto proof = wire::authProof(token, bytesOf(payload));
    writeFrame(socket_, deadline, wire::Op::kAuth, "",
               std::string(reinterpret_cast<const char*>(proof.data()), proof.size()));
    readFrame(socket_, deadline, name, &h, &payload, 0);
  } catch (const Error& e) {
    socket_.close();
    if (e.code() == ErrorCode::kTimeout) {
      fail(ErrorCode::kTimeout, {}, "store at ", name, " accepted the connection but did not finish the handshake ",
           "before the deadline: ", e.message());
    }
    if (e.code() == ErrorCode::kPeerLost) {
      fail(ErrorCode::kPeerLost, {}, "store at ", name, " closed the connection during the handshake: ", e.message());
    }
    throw;
  }
  if (h.op != wire::Op::kAuthResult || h.status != wire::Status::kOk) {
    socket_.close();
    if (h.op == wire::Op::kAuthResult && h.status == wire::Status::kAuthFailed) {
      fail(ErrorCode::kInvalidArgument, {}, "store at ", name, " rejected the job token (BRAID_TOKEN differs?)");
    }
    fail(ErrorCode::kInvalidArgument, {}, name, " is not a braid store (unexpected handshake reply)");
  }
}

TcpStoreClient::Reply TcpStoreClient::request(wire::Op op, const std::string& what, const std::string& key,
                                              const std::string& value, Deadline replyDeadline) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (broken_ || !socket_.valid()) {
    fail(ErrorCode::kPeerLost, {}, what, ": the connection to the store at ", server_.toString(),
         " is unusable after an earlier error");
  }
  try {
    writeFrame(socket_, replyDeadline, op, key, value);
    wire::Header h;
    Reply reply;
    readFrame(socket_, replyDeadline, server_.toString(), &h, &reply.value, wire::kMaxValueBytes);
    if (h.op != wire::Op::kReply) {
      fail(ErrorCode::kInternal, {}, "store sent op ", static_cast<int>(h.op), " where a reply belongs");
    }
    reply.status = h.status;
    return reply;
  } catch (const Error& e) {
    // Whatever was half sent or half received leaves the stream out of step.
    broken_ = true;
    socket_.close();
    fail(e.code(), e.context(), what, " at the store at ", server_.toString(), ": ", e.message());
  }
}

void TcpStoreClient::set(const std::string& key, const std::string& value) {
  checkKey("set", key);
  if (value.size() > wire::kMaxValueBytes) {
    fail(ErrorCode::kInvalidArgument, {}, "store set('", printable(key), "'): value of ", value.size(),
         " bytes (limit ", wire::kMaxValueBytes, ")");
  }
  const Reply r =
      request(wire::Op::kSet, strCat("set('", printable(key), "')"), key, value, Deadline::after(opTimeoutSeconds_));
  if (r.status != wire::Status::kOk) {
    fail(ErrorCode::kInternal, {}, "store set('", printable(key), "'): unexpected status ", static_cast<int>(r.status),
         ": ", r.value);
  }
}

std::string TcpStoreClient::get(const std::string& key, Deadline deadline) {
  checkKey("get", key);
  const double seconds = deadline.secondsLeft();
  const std::uint64_t waitMs =
      deadline.infinite() ? wire::kWaitForever : static_cast<std::uint64_t>(std::ceil(seconds * 1000.0));
  const Deadline replyDeadline =
      (deadline.infinite() ? Deadline::never() : Deadline::after(seconds + kReplyGraceSeconds))
          .cancellable(deadline.cancelFlag());
  Reply r = request(wire::Op::kGet, strCat("get('", printable(key), "')"), key,
                    encodeI64(static_cast<std::int64_t>(waitMs)), replyDeadline);
  if (r.status == wire::Status::kTimeout) {
    fail(ErrorCode::kTimeout, {}, "store get('", printable(key), "') at ", server_.toString(), " timed out after ",
         seconds, " s: no process set the key");
  }
  if (r.status != wire::Status::kOk) {
    fail(ErrorCode::kInternal, {}, "store get('", printable(key), "'): unexpected status ", static_cast<int>(r.status),
         ": ", r.value);
  }
  return std::move(r.value);
}

std::int64_t TcpStoreClient::add(const std::string& key, std::int64_t delta) {
  checkKey("add", key);
  const Reply r = request(wire::Op::kAdd, strCat("add('", printable(key), "')"), key, encodeI64(delta),
                          Deadline::after(opTimeoutSeconds_));
  if (r.status == wire::Status::kError) fail(ErrorCode::kInvalidArgument, {}, "store ", r.value);
  if (r.status != wire::Status::kOk || r.value.size() != 8) {
    fail(ErrorCode::kInternal, {}, "store add('", printable(key), "'): unexpected reply (status ",
         static_cast<int>(r.status), ", ", r.value.size(), " bytes)");
  }
  return static_cast<std::int64_t>(decodeU64(r.value));
}

}  // namespace braid::bootstrap
