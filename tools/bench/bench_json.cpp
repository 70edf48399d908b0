#include "bench/bench_json.hpp"

#include <fstream>
#include <stdexcept>

namespace braid::tools {

nlohmann::json toJson(const BenchRow& r) {
  nlohmann::json j = {
      {"impl", r.impl},   {"collective", r.collective}, {"dtype", r.dtype},        {"redop", r.redop},
      {"bytes", r.bytes}, {"count", r.count},           {"ranks", r.ranks},        {"root", r.root},
      {"mem", r.mem},     {"time_us", r.timeUs},        {"algbw_gbs", r.algbwGBs}, {"busbw_gbs", r.busbwGBs},
      {"wrong", r.wrong}};
  if (r.iterations > 0) j["iterations"] = r.iterations;
  if (r.voluntarySwitchesPerCall >= 0) j["voluntary_switches_per_call"] = r.voluntarySwitchesPerCall;
  if (r.involuntarySwitchesPerCall >= 0) j["involuntary_switches_per_call"] = r.involuntarySwitchesPerCall;
  if (r.issueUs >= 0) j["issue_us"] = r.issueUs;
  if (r.emptyLaunchUs >= 0) j["empty_launch_us"] = r.emptyLaunchUs;
  if (!r.algorithm.empty()) j["algorithm"] = r.algorithm;
  return j;
}

BenchRow rowFromJson(const nlohmann::json& j) {
  BenchRow r;
  r.impl = j.at("impl").get<std::string>();
  r.collective = j.at("collective").get<std::string>();
  r.dtype = j.at("dtype").get<std::string>();
  r.redop = j.value("redop", "");
  r.bytes = j.at("bytes").get<std::size_t>();
  r.count = j.at("count").get<std::size_t>();
  r.ranks = j.at("ranks").get<int>();
  r.root = j.value("root", -1);
  r.mem = j.value("mem", "host");
  r.timeUs = j.at("time_us").get<double>();
  r.algbwGBs = j.at("algbw_gbs").get<double>();
  r.busbwGBs = j.at("busbw_gbs").get<double>();
  r.wrong = j.at("wrong").get<long>();
  r.iterations = j.value("iterations", 0);
  r.voluntarySwitchesPerCall = j.value("voluntary_switches_per_call", -1.0);
  r.involuntarySwitchesPerCall = j.value("involuntary_switches_per_call", -1.0);
  r.issueUs = j.value("issue_us", -1.0);
  r.emptyLaunchUs = j.value("empty_launch_us", -1.0);
  r.algorithm = j.value("algorithm", "");
  return r;
}

void writeResults(const std::string& path, const nlohmann::json& meta, const std::vector<BenchRow>& rows) {
  nlohmann::json doc = {{"meta", meta}, {"results", nlohmann::json::array()}};
  for (const auto& r : rows) doc["results"].push_back(toJson(r));
  std::ofstream out(path);
  if (!out) throw std::runtime_error("cannot write " + path);
  out << doc.dump(2) << "\n";
  if (!out) throw std::runtime_error("error writing " + path);
}

namespace {

nlohmann::json readDocument(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  return nlohmann::json::parse(in);
}

}  // namespace

std::vector<BenchRow> readResults(const std::string& path) {
  const nlohmann::json doc = readDocument(path);
  std::vector<BenchRow> rows;
  for (const auto& j : doc.at("results")) rows.push_back(rowFromJson(j));
  return rows;
}

nlohmann::json readMeta(const std::string& path) {
  const nlohmann::json doc = readDocument(path);
  return doc.value("meta", nlohmann::json::object());
}

}  // namespace braid::tools
