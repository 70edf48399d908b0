// Rows of `braid bench` as JSON: the --json file braid writes, and what peers' drivers hand back to it.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/bench_options.hpp"

namespace braid::tools {

nlohmann::json toJson(const BenchRow& row);
BenchRow rowFromJson(const nlohmann::json& j);

/// Writes {"meta": meta, "results": [rows...]} to path (pretty-printed). Throws std::runtime_error naming the path.
void writeResults(const std::string& path, const nlohmann::json& meta, const std::vector<BenchRow>& rows);
/// Reads the "results" of such a file.
std::vector<BenchRow> readResults(const std::string& path);
/// Reads the "meta" of such a file ({} when it has none).
nlohmann::json readMeta(const std::string& path);

}  // namespace braid::tools
