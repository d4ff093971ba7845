// Prometheus text exposition for jvmtraced: the daemon's own gauges plus
// every stat worker's last block, merged so each metric family's HELP and
// TYPE appear once with all JVMs' samples under them (the format requires it).
#pragma once
#include <string>
#include <vector>

namespace jvmtrace {

std::string merge_exposition(const std::vector<std::string>& blocks);

// block with `labels` ("k=\"v\",...", already escaped) put first in every
// sample's label set.
std::string with_labels(const std::string& block, const std::string& labels);

}  // namespace jvmtrace
