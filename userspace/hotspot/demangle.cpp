#include "hotspot/demangle.h"

#include <cstring>
#include <vector>

namespace jvmtrace {

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_upper(char c) { return c >= 'A' && c <= 'Z'; }
bool is_lower(char c) { return c >= 'a' && c <= 'z'; }

// The builtin types (Itanium ABI 5.1.5), spelt as libstdc++ prints them.
const char* builtin(char c) {
  switch (c) {
    case 'v': return "void";
    case 'w': return "wchar_t";
    case 'b': return "bool";
    case 'c': return "char";
    case 'a': return "signed char";
    case 'h': return "unsigned char";
    case 's': return "short";
    case 't': return "unsigned short";
    case 'i': return "int";
    case 'j': return "unsigned int";
    case 'l': return "long";
    case 'm': return "unsigned long";
    case 'x': return "long long";
    case 'y': return "unsigned long long";
    case 'n': return "__int128";
    case 'o': return "unsigned __int128";
    case 'f': return "float";
    case 'd': return "double";
    case 'e': return "long double";
    case 'g': return "__float128";
    case 'z': return "...";
    default: return nullptr;
  }
}

const char* builtin_d(char c) {  // D<c>
  switch (c) {
    case 'n': return "decltype(nullptr)";
    case 'i': return "char32_t";
    case 's': return "char16_t";
    case 'u': return "char8_t";
    case 'a': return "auto";
    case 'c': return "decltype(auto)";
    default: return nullptr;
  }
}

struct Operator {
  const char code[3];
  const char* name;
};
const Operator kOperators[] = {
    {"nw", "new"},  {"na", "new[]"}, {"dl", "delete"}, {"da", "delete[]"}, {"ps", "+"},  {"ng", "-"},
    {"ad", "&"},    {"de", "*"},     {"co", "~"},      {"pl", "+"},        {"mi", "-"},  {"ml", "*"},
    {"dv", "/"},    {"rm", "%"},     {"an", "&"},      {"or", "|"},        {"eo", "^"},  {"aS", "="},
    {"pL", "+="},   {"mI", "-="},    {"mL", "*="},     {"dV", "/="},       {"rM", "%="}, {"aN", "&="},
    {"oR", "|="},   {"eO", "^="},    {"ls", "<<"},     {"rs", ">>"},       {"lS", "<<="}, {"rS", ">>="},
    {"eq", "=="},   {"ne", "!="},    {"lt", "<"},      {"gt", ">"},        {"le", "<="}, {"ge", ">="},
    {"ss", "<=>"},  {"nt", "!"},     {"aa", "&&"},     {"oo", "||"},       {"pp", "++"}, {"mm", "--"},
    {"cm", ","},    {"pm", "->*"},   {"pt", "->"},     {"cl", "()"},       {"ix", "[]"}, {"qu", "?"},
};

constexpr int kMaxDepth = 64;
constexpr size_t kMaxSubstitutions = 1024;

// A recursive-descent reader of the subset of the Itanium C++ ABI's
// mangling HotSpot's symbols use, building the text as it reads (no tree).
// Every step and every byte built is charged to work_; past kDemangleWork,
// kMaxDemangledBytes in one string, kMaxDepth of nesting or
// kMaxSubstitutions, it fails.  So its time and memory are bounded for any
// input: a back-reference copies text already built, charged again.
class Demangler {
 public:
  explicit Demangler(std::string_view s) : s_(s) {}

  bool encoding(std::string* out) {
    if (s_.substr(0, 2) != "_Z") return false;
    p_ = 2;
    return special_or_name(out);
  }

 private:
  std::string_view s_;
  size_t p_ = 0;
  size_t work_ = 0;
  int depth_ = 0;
  std::vector<std::string> subs_;
  std::string last_name_;  // for constructors and destructors: the last source name read

  struct Depth {
    explicit Depth(int* d) : d_(d) { ++*d_; }
    ~Depth() { --*d_; }
    int* d_;
  };

  char peek(size_t k = 0) const { return p_ + k < s_.size() ? s_[p_ + k] : '\0'; }
  bool eat(char c) {
    if (peek() != c) return false;
    p_++;
    return true;
  }
  bool charge(size_t n) {
    work_ += n + 1;
    return work_ <= kDemangleWork;
  }
  bool step() { return charge(0) && depth_ <= kMaxDepth; }
  bool cat(std::string* to, std::string_view what) {
    if (!charge(what.size()) || to->size() + what.size() > kMaxDemangledBytes) return false;
    to->append(what);
    return true;
  }
  bool add_sub(const std::string& s) {
    if (subs_.size() >= kMaxSubstitutions || !charge(s.size())) return false;
    subs_.push_back(s);
    return true;
  }

  bool special_or_name(std::string* out) {
    Depth d(&depth_);
    if (!step()) return false;
    if (peek() == 'T') {
      const char k = peek(1);
      const char* what = k == 'V' ? "vtable for " : k == 'T' ? "VTT for " : k == 'I' ? "typeinfo for "
                       : k == 'S' ? "typeinfo name for " : nullptr;
      if (what) {
        p_ += 2;
        std::string t;
        return type(&t) && cat(out, what) && cat(out, t);
      }
      what = k == 'W' ? "TLS wrapper function for " : k == 'H' ? "TLS init function for " : nullptr;
      if (what) {
        p_ += 2;
        std::string n;
        return name(&n, true) && cat(out, what) && cat(out, n);
      }
      if (k == 'h' || k == 'v' || k == 'c') {
        p_ += k == 'c' ? 2 : 1;  // (h and v are the call offset's own first letter)
        const int offsets = k == 'c' ? 2 : 1;
        for (int i = 0; i < offsets; i++)
          if (!call_offset()) return false;
        std::string n;
        if (!special_or_name(&n)) return false;
        return cat(out, k == 'h' ? "non-virtual thunk to " : k == 'v' ? "virtual thunk to "
                                                                    : "covariant return thunk to ") &&
               cat(out, n);
      }
      return false;
    }
    if (peek() == 'G') {
      if (peek(1) != 'V') return false;
      p_ += 2;
      std::string n;
      return name(&n, true) && cat(out, "guard variable for ") && cat(out, n);
    }
    return name(out, true);
  }

  // h <number> _ | v <number> _ <number> _
  bool call_offset() {
    const char k = peek();
    if (k != 'h' && k != 'v') return false;
    p_++;
    for (int i = 0; i < (k == 'v' ? 2 : 1); i++) {
      eat('n');
      if (!is_digit(peek())) return false;
      while (is_digit(peek())) p_++;
      if (!eat('_')) return false;
    }
    return true;
  }

  bool source_name(std::string* out) {
    size_t len = 0;
    if (!is_digit(peek())) return false;
    while (is_digit(peek())) {
      len = len * 10 + static_cast<size_t>(peek() - '0');
      p_++;
      if (len > s_.size()) return false;
    }
    if (len == 0 || len > s_.size() - p_) return false;
    std::string_view id = s_.substr(p_, len);
    p_ += len;
    // GCC's anonymous namespace: _GLOBAL__N_1 (or with '.' or '$').
    if (len >= 10 && id.substr(0, 8) == "_GLOBAL_" && std::strchr("._$", id[8]) && id[9] == 'N')
      id = "(anonymous namespace)";
    last_name_ = std::string(id);
    return charge(id.size()) && cat(out, id);
  }

  // [_ <digit>] | [__ <number> _]: a local entity's discriminator.
  void discriminator() {
    if (peek() != '_') return;
    if (is_digit(peek(1))) {
      p_ += 2;
    } else if (peek(1) == '_' && is_digit(peek(2))) {
      p_ += 2;
      while (is_digit(peek())) p_++;
      eat('_');
    }
  }

  bool unqualified_name(std::string* out) {
    Depth d(&depth_);
    if (!step()) return false;
    const char c = peek();
    if (is_digit(c)) {
      if (!source_name(out)) return false;
    } else if (c == 'L' && is_digit(peek(1))) {  // a name of internal linkage
      p_++;
      if (!source_name(out)) return false;
      discriminator();
    } else if (c == 'C' && peek(1) >= '1' && peek(1) <= '5') {
      if (last_name_.empty()) return false;
      p_ += 2;
      if (!cat(out, last_name_)) return false;
    } else if (c == 'D' && (peek(1) == '0' || peek(1) == '1' || peek(1) == '2' || peek(1) == '4' || peek(1) == '5')) {
      if (last_name_.empty()) return false;
      p_ += 2;
      if (!cat(out, "~") || !cat(out, last_name_)) return false;
    } else if (is_lower(c)) {
      const Operator* op = nullptr;
      for (const Operator& o : kOperators)
        if (o.code[0] == c && o.code[1] == peek(1)) op = &o;
      if (!op) return false;  // conversion, literal, vendor operators: not HotSpot's
      p_ += 2;
      if (!cat(out, "operator") || (is_lower(op->name[0]) && !cat(out, " ")) || !cat(out, op->name)) return false;
    } else {
      return false;  // unnamed types, lambdas, modules: not in the forms known here
    }
    while (peek() == 'B') {  // ABI tags: "[abi:cxx11]"
      p_++;
      const std::string held = last_name_;  // (a tag is no name)
      std::string tag;
      if (!source_name(&tag)) return false;
      last_name_ = held;
      if (!cat(out, "[abi:") || !cat(out, tag) || !cat(out, "]")) return false;
    }
    return true;
  }

  // S_, S<seq-id>_, or one of the standard abbreviations.
  bool substitution(std::string* out) {
    if (!eat('S')) return false;
    const char c = peek();
    if (c == '_' || is_digit(c) || is_upper(c)) {
      size_t index = 0;
      if (c != '_') {
        size_t v = 0;
        while (is_digit(peek()) || is_upper(peek())) {
          v = v * 36 + static_cast<size_t>(is_digit(peek()) ? peek() - '0' : peek() - 'A' + 10);
          p_++;
          if (v >= subs_.size()) return false;
        }
        index = v + 1;
      }
      if (!eat('_') || index >= subs_.size()) return false;
      return cat(out, subs_[index]);
    }
    const char* expansion = nullptr;
    const char* last = nullptr;
    switch (c) {
      case 't': expansion = "std"; break;
      case 'a': expansion = "std::allocator"; last = "allocator"; break;
      case 'b': expansion = "std::basic_string"; last = "basic_string"; break;
      // libstdc++ spells a constructor of these in full: not here.
      case 's': expansion = "std::string"; last = ""; break;
      case 'i': expansion = "std::istream"; last = ""; break;
      case 'o': expansion = "std::ostream"; last = ""; break;
      case 'd': expansion = "std::iostream"; last = ""; break;
      default: return false;
    }
    p_++;
    if (last) last_name_ = last;
    return cat(out, expansion);
  }

  // <name>: nested, unscoped (maybe std::), unscoped template, or (only as
  // a whole encoding: top) a local name, named by its function.
  bool name(std::string* out, bool top) {
    Depth d(&depth_);
    if (!step()) return false;
    const char c = peek();
    if (c == 'N') return nested(out);
    if (c == 'Z') {
      // Z <function encoding> E <entity>: shown as the function (what
      // follows its parameter list is not read), or as function::entity
      // when the function has no parameter list (C linkage).
      if (!top) return false;
      p_++;
      if (peek() == 'T' || peek() == 'G' || !name(out, true)) return false;
      if (!eat('E')) return true;
      if (peek() == 's') return cat(out, "::string literal");
      std::string entity;
      return name(&entity, false) && cat(out, "::") && cat(out, entity);
    }
    bool subst = false;
    if (c == 'S' && peek(1) == 't') {
      p_ += 2;
      if (!cat(out, "std::") || !unqualified_name(out)) return false;
    } else if (c == 'S') {
      if (!substitution(out)) return false;
      subst = true;
    } else if (!unqualified_name(out)) {
      return false;
    }
    if (peek() == 'I') {
      if (!subst && !add_sub(*out)) return false;
      if (!template_args(out)) return false;
    }
    return true;
  }

  // N [r][V][K] [R|O] <prefix>... E.  Each prefix is a substitution
  // candidate but the whole name, and one read from a substitution.
  bool nested(std::string* out) {
    if (!eat('N')) return false;
    while (peek() == 'r' || peek() == 'V' || peek() == 'K') p_++;
    if (peek() == 'R' || peek() == 'O') p_++;
    std::string cur;
    bool have = false;
    for (;;) {
      if (!step()) return false;
      const char c = peek();
      if (c == 'E') {
        p_++;
        break;
      }
      if (c == '\0') return false;
      if (c == 'I') {
        if (!have || !template_args(&cur)) return false;
      } else if (c == 'S') {  // S_, S0_ ...; St (std), Sa ...: not a new candidate
        if (have || !substitution(&cur)) return false;
        have = true;
        continue;
      } else if (c == 'T' || (c == 'D' && (peek(1) == 't' || peek(1) == 'T'))) {
        return false;  // template parameters, decltype: not in the forms known here
      } else if (c == 'M') {
        p_++;
        continue;
      } else {
        if (have && !cat(&cur, "::")) return false;
        if (!unqualified_name(&cur)) return false;
      }
      have = true;
      if (peek() != 'E' && !add_sub(cur)) return false;
    }
    return have && cat(out, cur);
  }

  // I <arg>+ E, printed "<a, b>" (and "> >", "< <" as libstdc++ does).
  bool template_args(std::string* out) {
    Depth d(&depth_);
    if (!step() || !eat('I')) return false;
    const std::string held = last_name_;  // (the arguments' names are not the template's)
    if (!out->empty() && out->back() == '<' && !cat(out, " ")) return false;
    if (!cat(out, "<")) return false;
    bool first = true;
    while (!eat('E')) {
      if (peek() == '\0') return false;
      std::string arg;
      if (!template_arg(&arg)) return false;
      if (arg.empty()) continue;  // an empty pack
      if ((!first && !cat(out, ", ")) || !cat(out, arg)) return false;
      first = false;
    }
    last_name_ = held;
    if (!out->empty() && out->back() == '>' && !cat(out, " ")) return false;
    return cat(out, ">");
  }

  bool template_arg(std::string* out) {
    Depth d(&depth_);
    if (!step()) return false;
    const char c = peek();
    if (c == 'L') return literal(out);
    if (c == 'J') {  // an argument pack, inline
      p_++;
      bool first = true;
      while (!eat('E')) {
        if (peek() == '\0') return false;
        std::string arg;
        if (!template_arg(&arg)) return false;
        if (arg.empty()) continue;
        if ((!first && !cat(out, ", ")) || !cat(out, arg)) return false;
        first = false;
      }
      return true;
    }
    if (c == 'X') return false;  // expressions: not in the forms known here
    return type(out);
  }

  // L <type> [n] <digits> E, printed as libstdc++ does: 5, 5u, 5ul, true,
  // (MemType)5, (char)65.
  bool literal(std::string* out) {
    if (!eat('L') || peek() == '_') return false;  // L_Z...E: an address, not here
    const char b = builtin(peek()) ? peek() : 0;
    if (b == 'f' || b == 'd' || b == 'e' || b == 'g' || b == 'v' || b == 'z') return false;
    std::string t;
    if (!type(&t)) return false;
    const bool neg = eat('n');
    const size_t start = p_;
    while (is_digit(peek())) p_++;
    if (p_ == start || p_ - start > 40) return false;
    const std::string_view digits = s_.substr(start, p_ - start);
    if (!eat('E')) return false;
    const char* suffix = b == 'i' ? "" : b == 'j' ? "u" : b == 'l' ? "l" : b == 'm' ? "ul"
                       : b == 'x' ? "ll" : b == 'y' ? "ull" : nullptr;
    if (suffix) return (!neg || cat(out, "-")) && cat(out, digits) && cat(out, suffix);
    if (b == 'b' && !neg && (digits == "0" || digits == "1")) return cat(out, digits == "0" ? "false" : "true");
    return cat(out, "(") && cat(out, t) && cat(out, ")") && (!neg || cat(out, "-")) && cat(out, digits);
  }

  bool type(std::string* out) {
    Depth d(&depth_);
    if (!step()) return false;
    const char c = peek();
    if (const char* b = builtin(c)) {
      p_++;
      return cat(out, b);
    }
    if (c == 'D') {
      const char* b = builtin_d(peek(1));
      if (!b) return false;  // pack expansions, decltype, vector types: not here
      p_ += 2;
      return cat(out, b);
    }
    if (c == 'r' || c == 'V' || c == 'K') {
      // Printed innermost first: VKi is "int const volatile".
      const size_t start = p_;
      while (peek() == 'r' || peek() == 'V' || peek() == 'K') p_++;
      const std::string_view quals = s_.substr(start, p_ - start);
      std::string t;
      if (!type(&t)) return false;
      for (size_t i = quals.size(); i-- > 0;)
        if (!cat(&t, quals[i] == 'K' ? " const" : quals[i] == 'V' ? " volatile" : " restrict")) return false;
      return add_sub(t) && cat(out, t);
    }
    if (c == 'P' || c == 'R' || c == 'O') {
      p_++;
      std::string t;
      if (!type(&t) || !cat(&t, c == 'P' ? "*" : c == 'R' ? "&" : "&&")) return false;
      return add_sub(t) && cat(out, t);
    }
    if (c == 'S' && (is_digit(peek(1)) || peek(1) == '_' || is_upper(peek(1)))) {
      std::string t;
      if (!substitution(&t)) return false;
      if (peek() == 'I' && (!template_args(&t) || !add_sub(t))) return false;
      return cat(out, t);
    }
    if (c == 'S' && peek(1) != 't') {  // Sa, Sb, ...: no candidate unless templated
      std::string t;
      if (!substitution(&t)) return false;
      if (peek() == 'I' && (!template_args(&t) || !add_sub(t))) return false;
      return cat(out, t);
    }
    if (c == 'N' || c == 'S' || is_digit(c)) {
      std::string t;
      if (!name(&t, false)) return false;
      return add_sub(t) && cat(out, t);
    }
    return false;  // template parameters, functions, arrays, members, vendor types: not here
  }
};

bool plain_identifier(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!(is_digit(c) || is_upper(c) || is_lower(c) || c == '_')) return false;
  return true;
}

// <len><id> of `id` at the start of *rest: consumed if there.
bool eat_source_name(std::string_view* rest, std::string_view id) {
  const std::string len = std::to_string(id.size());
  if (rest->substr(0, len.size()) != len || rest->substr(len.size(), id.size()) != id) return false;
  rest->remove_prefix(len.size() + id.size());
  return true;
}

// <len><id> at the start of *rest, a plain identifier: consumed, in *id.
bool read_source_name(std::string_view* rest, std::string_view* id) {
  size_t len = 0, digits = 0;
  while (digits < rest->size() && is_digit((*rest)[digits]) && digits < 5) len = len * 10 + ((*rest)[digits++] - '0');
  if (!digits || (*rest)[0] == '0' || len == 0 || len > rest->size() - digits) return false;
  *id = rest->substr(digits, len);
  if (!plain_identifier(*id)) return false;
  rest->remove_prefix(digits + len);
  return true;
}

}  // namespace

bool demangle_name(std::string_view mangled, std::string* out) {
  if (mangled.size() > kMaxMangledBytes) return false;
  // A compiler's clone of a function (".part.0", ".cold", ".isra.0") is
  // named by the function.
  const size_t dot = mangled.find('.');
  if (dot != std::string_view::npos) mangled = mangled.substr(0, dot);
  std::string name;
  Demangler d(mangled);
  if (!d.encoding(&name) || name.empty()) return false;
  *out = std::move(name);
  return true;
}

std::string shown_name(std::string_view mangled) {
  std::string name;
  return demangle_name(mangled, &name) ? name : std::string(mangled);
}

bool mangled_function_is(std::string_view mangled, std::string_view qualified) {
  std::vector<std::string_view> parts;
  for (size_t pos = 0;;) {
    const size_t next = qualified.find("::", pos);
    parts.push_back(qualified.substr(pos, next == std::string_view::npos ? std::string_view::npos : next - pos));
    if (!plain_identifier(parts.back())) return false;
    if (next == std::string_view::npos) break;
    pos = next + 2;
  }
  if (mangled.find('.') != std::string_view::npos || mangled.substr(0, 2) != "_Z") return false;
  std::string_view rest = mangled.substr(2);
  if (parts.size() == 1) {
    if (!eat_source_name(&rest, parts[0])) return false;
  } else {
    if (rest.empty() || rest[0] != 'N') return false;
    rest.remove_prefix(1);
    while (!rest.empty() && (rest[0] == 'r' || rest[0] == 'V' || rest[0] == 'K')) rest.remove_prefix(1);
    if (!rest.empty() && (rest[0] == 'R' || rest[0] == 'O')) rest.remove_prefix(1);
    for (std::string_view part : parts)
      if (!eat_source_name(&rest, part)) return false;
    if (rest.empty() || rest[0] != 'E') return false;
    rest.remove_prefix(1);
  }
  // The parameter list follows: not template arguments ('I') or an ABI tag
  // ('B').
  return !rest.empty() && rest[0] != 'I' && rest[0] != 'B';
}

std::string vtable_class(std::string_view mangled) {
  if (mangled.substr(0, 4) != "_ZTV") return {};
  std::string_view rest = mangled.substr(4), id;
  if (!rest.empty() && rest[0] != 'N') return read_source_name(&rest, &id) && rest.empty() ? std::string(id) : "";
  if (rest.empty()) return {};
  rest.remove_prefix(1);
  std::string out;
  while (!rest.empty() && rest[0] != 'E') {
    if (!read_source_name(&rest, &id)) return {};
    if (!out.empty()) out += "::";
    out.append(id);
  }
  return rest == "E" && !out.empty() ? out : "";
}

}  // namespace jvmtrace
