#include "daemon/metrics.h"

#include <map>
#include <sstream>

namespace jvmtrace {

std::string merge_exposition(const std::vector<std::string>& blocks) {
  struct Family {
    std::string help, type;
    std::vector<std::string> samples;
  };
  std::vector<std::string> order;
  std::map<std::string, Family> families;
  for (const std::string& b : blocks) {
    std::istringstream in(b);
    std::string line, current;
    while (std::getline(in, line)) {
      if (line.empty()) continue;
      if (line.compare(0, 7, "# HELP ") == 0 || line.compare(0, 7, "# TYPE ") == 0) {
        std::istringstream l(line.substr(7));
        l >> current;
        if (!families.count(current)) order.push_back(current);
        Family& f = families[current];
        (line[2] == 'H' ? f.help : f.type) = line;
        continue;
      }
      if (line[0] == '#') continue;
      if (current.empty()) {  // a sample without a family: its own name is the family
        current = line.substr(0, line.find_first_of("{ "));
        if (!families.count(current)) order.push_back(current);
      }
      families[current].samples.push_back(line);
    }
  }
  std::string out;
  for (const std::string& name : order) {
    const Family& f = families[name];
    if (!f.help.empty()) out += f.help + "\n";
    if (!f.type.empty()) out += f.type + "\n";
    for (const std::string& s : f.samples) out += s + "\n";
  }
  return out;
}

std::string with_labels(const std::string& block, const std::string& labels) {
  std::string out;
  out.reserve(block.size() + block.size() / 2);
  size_t a = 0;
  while (a < block.size()) {
    size_t nl = block.find('\n', a);
    if (nl == std::string::npos) nl = block.size();
    const std::string line = block.substr(a, nl - a);
    a = nl + 1;
    if (line.empty() || line[0] == '#') {
      out += line + "\n";
      continue;
    }
    const size_t brace = line.find('{'), space = line.find(' ');
    if (brace != std::string::npos && brace < space)
      out += line.substr(0, brace + 1) + labels + (line[brace + 1] == '}' ? "" : ",") + line.substr(brace + 1) + "\n";
    else
      out += line.substr(0, space) + "{" + labels + "}" + line.substr(space) + "\n";
  }
  return out;
}

}  // namespace jvmtrace
