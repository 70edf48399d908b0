#include "bootstrap/slurm_hostlist.hpp"

#include <cctype>
#include <charconv>
#include <cstdint>

#include "base/error.hpp"

namespace braid::bootstrap {

namespace {

struct Range {
  std::uint64_t lo = 0;
  std::uint64_t hi = 0;
  std::size_t width = 0;  // digits of the lower bound as written: Slurm pads every number of the range to it
};

// One host-list entry is a sequence of literal text and bracket groups: "x", "[1-2]", "-ib".
struct Piece {
  std::string text;           // literal, when ranges is empty
  std::vector<Range> ranges;  // a bracket group's comma-separated ranges
};
using Entry = std::vector<Piece>;

class Parser {
 public:
  Parser(std::string_view list, std::string_view source) : list_(list), source_(source) {}

  std::vector<Entry> parse() {
    if (list_.empty()) bad("it is empty");
    std::vector<Entry> entries;
    std::size_t pos = 0;
    for (;;) {
      entries.push_back(parseEntry(pos));
      if (pos == list_.size()) break;
      ++pos;  // the ',' between entries
    }
    return entries;
  }

 private:
  [[noreturn]] void bad(const std::string& why) const {
    fail(ErrorCode::kInvalidArgument, {}, source_, "='", list_, "' is not a Slurm host list: ", why);
  }

  Entry parseEntry(std::size_t& pos) {
    Entry entry;
    const std::size_t start = pos;
    while (pos < list_.size() && list_[pos] != ',') {
      if (list_[pos] == ']') bad(strCat("']' without '[' at offset ", pos));
      if (list_[pos] == '[') {
        entry.push_back(Piece{{}, parseGroup(pos)});
        continue;
      }
      const std::size_t end = list_.find_first_of(",[]", pos);
      const std::size_t stop = end == std::string_view::npos ? list_.size() : end;
      entry.push_back(Piece{std::string(list_.substr(pos, stop - pos)), {}});
      pos = stop;
    }
    if (pos == start) bad(strCat("empty host name at offset ", start));
    return entry;
  }

  // At '[': reads "lo[-hi](,lo[-hi])*]" and leaves pos after the ']'.
  std::vector<Range> parseGroup(std::size_t& pos) {
    const std::size_t open = pos++;
    const std::size_t close = list_.find(']', pos);
    if (close == std::string_view::npos) bad(strCat("'[' at offset ", open, " has no ']'"));
    const std::string_view body = list_.substr(pos, close - pos);
    if (body.find('[') != std::string_view::npos) bad(strCat("nested '[' after offset ", open));
    if (body.empty()) bad(strCat("empty brackets at offset ", open));
    std::vector<Range> ranges;
    std::size_t at = 0;
    for (;;) {
      const std::size_t comma = body.find(',', at);
      const std::string_view item = body.substr(at, comma == std::string_view::npos ? body.npos : comma - at);
      ranges.push_back(parseRange(item));
      if (comma == std::string_view::npos) break;
      at = comma + 1;
    }
    pos = close + 1;
    return ranges;
  }

  Range parseRange(std::string_view item) {
    const std::size_t dash = item.find('-');
    const std::string_view loText = item.substr(0, dash);
    const std::string_view hiText = dash == std::string_view::npos ? loText : item.substr(dash + 1);
    Range r;
    r.lo = number(loText, item);
    r.hi = number(hiText, item);
    r.width = loText.size();
    if (r.hi < r.lo) bad(strCat("range ", item, " runs backwards"));
    return r;
  }

  std::uint64_t number(std::string_view text, std::string_view item) {
    std::uint64_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    // from_chars accepts no sign or space, so digits-only is all that passes; 18 digits keeps +1 from overflowing.
    if (text.empty() || text.size() > 18 || ec != std::errc() || end != text.data() + text.size()) {
      bad(strCat("'", item, "' is not a number or a range LO-HI"));
    }
    return value;
  }

  std::string_view list_;
  std::string_view source_;
};

std::string padded(std::uint64_t value, std::size_t width) {
  std::string digits = std::to_string(value);
  if (digits.size() < width) digits.insert(0, width - digits.size(), '0');
  return digits;
}

// Appends the hosts of entry[piece..] prefixed by `prefix`, depth first so the last group varies fastest.
void expand(const Entry& entry, std::size_t piece, const std::string& prefix, std::size_t limit,
            std::vector<std::string>& out) {
  if (out.size() >= limit) return;
  if (piece == entry.size()) {
    out.push_back(prefix);
    return;
  }
  const Piece& p = entry[piece];
  if (p.ranges.empty()) return expand(entry, piece + 1, prefix + p.text, limit, out);
  for (const Range& r : p.ranges) {
    for (std::uint64_t v = r.lo; v <= r.hi && out.size() < limit; ++v) {
      expand(entry, piece + 1, prefix + padded(v, r.width), limit, out);
    }
  }
}

}  // namespace

std::vector<std::string> expandSlurmHostlist(std::string_view list, std::size_t limit, std::string_view source) {
  const std::vector<Entry> entries = Parser(list, source).parse();
  std::vector<std::string> hosts;
  for (const Entry& entry : entries) expand(entry, 0, "", limit, hosts);
  return hosts;
}

std::string firstSlurmHost(std::string_view list, std::string_view source) {
  return expandSlurmHostlist(list, 1, source).front();
}

}  // namespace braid::bootstrap
