// The launcher's output relay: a rank's stdout or stderr passed on line by line, each line prefixed "[rank] " and
// written in one piece, so that lines of different ranks never interleave. Separate from launcher.cpp because it is
// plain text handling: no process, pipe or signal in it.
#pragma once

#include <string>
#include <string_view>

namespace braid::tools {

// Writes all of data; false once fd is unusable (closed reader, bad fd), after which the caller drops its output.
bool writeAll(int fd, std::string_view data);

// Relays one rank's stdout or stderr: whole lines, each prefixed "[rank] ", each written in one piece.
class LineRelay {
 public:
  LineRelay(int rank, int dest) : prefix_("[" + std::to_string(rank) + "] "), dest_(dest) {}

  void feed(std::string_view data);
  // Writes a partial line with a newline of its own, so the next line of another rank starts on a line.
  void flush();

 private:
  void emit(std::string_view text);

  std::string prefix_;
  int dest_;
  std::string pending_;
};

}  // namespace braid::tools
