// Tests of the bounded demangler (userspace/hotspot/demangle.h) without root
// or a JVM.  Run by tests/test_hostile_target.py; exit status 0 = all passed.
//
//   demangle_test [--seed N]      known names, matching by mangled form,
//                                 back-reference bombs and seeded random
//                                 input, each within a time and size bound
//   demangle_test --against ELF   every C++ symbol of a trusted ELF file (a
//                                 real libjvm.so): where this demangler
//                                 names one, libstdc++'s __cxa_demangle
//                                 (trusted input only: no budget) agrees
#include <cxxabi.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "check.h"
#include "hotspot/demangle.h"

using jvmtrace::demangle_name;

namespace {

using jvmtrace_test::failures;

std::string b36(size_t v) {
  std::string s;
  do {
    const int d = static_cast<int>(v % 36);
    s.insert(s.begin(), static_cast<char>(d < 10 ? '0' + d : 'A' + d - 10));
    v /= 36;
  } while (v);
  return s;
}

// The bomb: AllocTracer::send_allocation_in_new_tlab(A<int, int>,
// A<A<int, int>, A<int, int> >, ...), each parameter twice the one before.
std::string bomb(size_t n) {
  std::string s = "_ZN11AllocTracer27send_allocation_in_new_tlabE1AIiiE";
  for (size_t k = 1; k <= n; k++) s += "S0_IS" + b36(k) + "_S" + b36(k) + "_E";
  return s;
}

// The same doubling inside a vtable's class (what stat's vtables() and
// the recorder's collector names read) and inside a function's name (what
// a stack frame shows).
std::string vtable_bomb(size_t n) {
  std::string s = "_ZTV1AI1BIiiE";
  for (size_t k = 1; k <= n; k++) s += "S0_IS" + b36(k) + "_S" + b36(k) + "_E";
  return s + "E";
}
std::string name_bomb(size_t n) {
  std::string s = "_ZN1AI1BIiiE";
  for (size_t k = 1; k <= n; k++) s += "S0_IS" + b36(k) + "_S" + b36(k) + "_E";
  return s + "E1fEv";
}

// The call's CPU time (this thread's: a loaded machine's preemption is not
// the demangler's).
double seconds_of(const std::string& m, std::string* out, bool* ok) {
  timespec t0, t1;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
  *ok = demangle_name(m, out);
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
  return static_cast<double>(t1.tv_sec - t0.tv_sec) + static_cast<double>(t1.tv_nsec - t0.tv_nsec) * 1e-9;
}

// One call: within 50 ms (the budget is ~50 us of work; 1000x for a slow,
// loaded machine) and the size bound.
double bounded(const std::string& m, const char* what) {
  std::string out;
  bool ok;
  const double s = seconds_of(m, &out, &ok);
  CHECK(s < 0.05, "%s: %.3f s for a symbol of %zu bytes", what, s, m.size());
  CHECK(!ok || out.size() <= jvmtrace::kMaxDemangledBytes, "%s: %zu bytes out", what, out.size());
  return s;
}

void known() {
  const std::pair<const char*, const char*> cases[] = {
      {"_ZN11AllocTracer27send_allocation_in_new_tlabEP5KlassP8HeapWordmmP6Thread",
       "AllocTracer::send_allocation_in_new_tlab"},
      {"_ZTV11G1NewTracer", "vtable for G1NewTracer"},
      {"_ZTI11G1NewTracer", "typeinfo for G1NewTracer"},
      {"_ZNK8Universe5ptr_tEv", "Universe::ptr_t"},
      {"_ZN21OopOopIterateDispatchI14G1CMOopClosureE5Table15oop_oop_iterateI13InstanceKlass9narrowOopEEvPS0_P7oopDescP5Klass",
       "OopOopIterateDispatch<G1CMOopClosure>::Table::oop_oop_iterate<InstanceKlass, narrowOop>"},
      {"_ZN8CHeapObjIL8MEMFLAGS5EEnwEm", "CHeapObj<(MEMFLAGS)5>::operator new"},
      {"_ZN13GrowableArrayIiEC2Ev", "GrowableArray<int>::GrowableArray"},
      {"_ZN13GrowableArrayIiED0Ev", "GrowableArray<int>::~GrowableArray"},
      {"_ZN1AI1BI1CIiEEE1fEv", "A<B<C<int> > >::f"},
      {"_ZN1AILi5ELj3ELb1ELln2EE1gEv", "A<5, 3u, true, -2l>::g"},
      {"_ZN1AIPKcRiE1hEv", "A<char const*, int&>::h"},
      {"_ZN12_GLOBAL__N_13fooEv", "(anonymous namespace)::foo"},
      {"_ZL10local_funcv", "local_func"},
      {"_ZZN1A1fEvE1x", "A::f"},
      {"_ZN1A1fEv.part.0", "A::f"},
      {"_ZThn8_N1B1fEv", "non-virtual thunk to B::f"},
      {"_ZTv0_n24_N1B1gEv", "virtual thunk to B::g"},
      {"_ZGVZN1A1fEvE1x", "guard variable for A::f"},
      {"_ZNSt6vectorIiSaIiEE9push_backERKi", "std::vector<int, std::allocator<int> >::push_back"},
      {"_ZN1A1BIS_E1fEv", "A::B<A>::f"},
      {"_ZN1AltIiEEbv", "A::operator< <int>"},
      {"_ZN1A3getB5cxx11Ev", "A::get[abi:cxx11]"},
  };
  for (const auto& [m, want] : cases) {
    std::string got;
    const bool ok = demangle_name(m, &got);
    CHECK(ok && got == want, "%s: got %s (%s), want %s", m, got.c_str(), ok ? "named" : "not named", want);
  }
  // Not demangled, shown as they are: C names, forms not known here.
  for (const char* m : {"gHotSpotVMStructs", "JVM_GetVersion", "_ZN1AIT_E1fEv", "_Z", "_ZN", "_ZNE", "_ZN1A",
                        "_ZN1AIS5_E1fEv", "_ZN999999999999999999999AE"}) {
    std::string got = "untouched";
    CHECK(!demangle_name(m, &got) && got == "untouched", "%s: named %s", m, got.c_str());
    CHECK(jvmtrace::shown_name(m) == m, "%s is not shown as it is", m);
  }
  // Matching by mangled form.
  const char* q = "AllocTracer::send_allocation_in_new_tlab";
  CHECK(jvmtrace::mangled_function_is("_ZN11AllocTracer27send_allocation_in_new_tlabEP5KlassP8HeapWordmmP6Thread", q), "plain");
  CHECK(jvmtrace::mangled_function_is("_ZNK11AllocTracer27send_allocation_in_new_tlabEv", q), "const method");
  CHECK(jvmtrace::mangled_function_is(bomb(40), q), "the bomb is that function by name (and is not demangled)");
  CHECK(!jvmtrace::mangled_function_is("_ZN11AllocTracer27send_allocation_in_new_tlabEv.part.0", q), "clone");
  CHECK(!jvmtrace::mangled_function_is("_ZN11AllocTracer27send_allocation_in_new_tlabIiEEvv", q), "template");
  CHECK(!jvmtrace::mangled_function_is("_ZN11AllocTracer27send_allocation_in_new_tlabE", q), "no parameters");
  CHECK(!jvmtrace::mangled_function_is("_ZN11AllocTracer28send_allocation_in_new_tlabXEv", q), "longer name");
  CHECK(!jvmtrace::mangled_function_is("_ZN2NS11AllocTracer27send_allocation_in_new_tlabEv", q), "other scope");
  CHECK(!jvmtrace::mangled_function_is("_ZZN11AllocTracer27send_allocation_in_new_tlabEvE1x", q), "local");
  CHECK(jvmtrace::mangled_function_is("_Z3fooi", "foo") && !jvmtrace::mangled_function_is("_Z3fooIiEvi", "foo"),
        "unscoped");
  CHECK(jvmtrace::vtable_class("_ZTV11G1NewTracer") == "G1NewTracer", "vtable");
  CHECK(jvmtrace::vtable_class("_ZTVN2ns8MyTracerE") == "ns::MyTracer", "nested vtable");
  CHECK(jvmtrace::vtable_class(vtable_bomb(40)).empty(), "a template class's vtable is not a plain class");
  CHECK(jvmtrace::vtable_class("_ZTV11G1NewTracerX").empty() && jvmtrace::vtable_class("_ZTV011G1NewTracer").empty(),
        "trailing text, leading zero");
}

void bombs() {
  double worst = 0;
  size_t first_refused = 0;
  for (size_t n = 1; n <= 400; n++) {
    for (const std::string& m : {bomb(n), vtable_bomb(n), name_bomb(n)}) worst = std::max(worst, bounded(m, "bomb"));
    // Small ones are named in full; once past the budget, none is.
    std::string out;
    const bool ok = demangle_name(vtable_bomb(n), &out);
    if (!ok && !first_refused) first_refused = n;
    CHECK(ok == !first_refused, "vtable bomb of %zu: %s", n, ok ? out.c_str() : "not named");
    CHECK(!ok || out.rfind("vtable for A<B<int, int>", 0) == 0, "vtable bomb of %zu: %s", n, out.c_str());
  }
  CHECK(first_refused > 3 && first_refused < 12, "the vtable bomb is refused from %zu on", first_refused);
  std::string out;
  CHECK(demangle_name(bomb(30), &out) && out == "AllocTracer::send_allocation_in_new_tlab",
        "the bomb's parameters are not read: %s", out.c_str());
  // Longer than kMaxMangledBytes: not looked at.
  CHECK(!demangle_name(name_bomb(1000), &out), "a name of %zu bytes", name_bomb(1000).size());
  std::printf("bombs: slowest %.1f us\n", worst * 1e6);
}

// Seeded random input: strings of the mangling's own letters, and real
// names cut, spliced and mutated.
void random_input(unsigned seed) {
  std::mt19937 rng(seed);
  const std::string alphabet = "_ZNESILTKVrPROCDB0123456789abcdefghijlmnostvxyz";
  const std::vector<std::string> seeds = {bomb(8), vtable_bomb(8), name_bomb(8),
                                          "_ZN21OopOopIterateDispatchI14G1CMOopClosureE5Table15oop_oop_iterateI13InstanceKlass9narrowOopEEvPS0_P7oopDescP5Klass",
                                          "_ZN1AILi5ELj3ELb1ELln2EE1gEv", "_ZNSt6vectorIiSaIiEE9push_backERKi"};
  double worst = 0;
  size_t named = 0;
  const int rounds = 200000;
  for (int i = 0; i < rounds; i++) {
    std::string m = "_Z";
    if (i % 2) {
      const size_t len = rng() % 600;
      for (size_t k = 0; k < len; k++) m += alphabet[rng() % alphabet.size()];
    } else {
      m = seeds[rng() % seeds.size()];
      for (int edits = 1 + rng() % 8; edits--;) {
        const size_t at = rng() % (m.size() + 1);
        switch (rng() % 4) {
          case 0: m.insert(at, 1, alphabet[rng() % alphabet.size()]); break;
          case 1: if (at < m.size()) m.erase(at, 1); break;
          case 2: if (at < m.size()) m[at] = alphabet[rng() % alphabet.size()]; break;
          case 3: m.insert(at, seeds[rng() % seeds.size()].substr(2 + rng() % 8, 4 + rng() % 40)); break;
        }
      }
    }
    std::string out;
    bool ok;
    const double s = seconds_of(m, &out, &ok);
    worst = std::max(worst, s);
    named += ok;
    CHECK(s < 0.05, "random %d: %.3f s for %s", i, s, m.c_str());
    CHECK(!ok || (!out.empty() && out.size() <= jvmtrace::kMaxDemangledBytes), "random %d: %zu bytes", i, out.size());
  }
  std::printf("random (seed %u): %d inputs, %zu named, slowest %.1f us\n", seed, rounds, named, worst * 1e6);
}

// "void A::f<int>(int) const" -> "void A::f<int>": the parameter list starts
// at the first '(' outside template brackets (what function_at() showed).
std::string cut_parameters(const std::string& name) {
  int depth = 0;
  for (size_t i = 0; i < name.size(); i++) {
    if (name[i] == '<') depth++;
    else if (name[i] == '>') depth--;
    else if (name[i] == '(' && depth == 0 && i > 0) return name.substr(0, i);
  }
  return name;
}

int against(const char* path) {
  elf_version(EV_CURRENT);
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  Elf* elf = fd < 0 ? nullptr : elf_begin(fd, ELF_C_READ, nullptr);
  if (!elf) {
    std::fprintf(stderr, "cannot read %s\n", path);
    return 2;
  }
  std::set<std::string> names;
  for (Elf_Scn* scn = nullptr; (scn = elf_nextscn(elf, scn));) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) || !sh.sh_entsize) continue;
    Elf_Data* data = elf_getdata(scn, nullptr);
    for (size_t i = 0; data && i < sh.sh_size / sh.sh_entsize; i++) {
      GElf_Sym s;
      const char* n = gelf_getsym(data, static_cast<int>(i), &s) ? elf_strptr(elf, sh.sh_link, s.st_name) : nullptr;
      if (n && std::strncmp(n, "_Z", 2) == 0) names.insert(n);
    }
  }
  size_t named = 0, same = 0, refused = 0, theirs_failed = 0;
  double worst = 0;
  for (const std::string& m : names) {
    int status = 0;
    char* d = abi::__cxa_demangle(m.c_str(), nullptr, nullptr, &status);
    std::string out;
    bool ok;
    worst = std::max(worst, seconds_of(m, &out, &ok));
    if (status != 0 || !d) {
      theirs_failed++;
      std::free(d);
      continue;
    }
    const std::string ref = cut_parameters(d);
    std::free(d);
    if (!ok) {
      if (std::getenv("DEMANGLE_TEST_SHOW")) std::printf("shown mangled: %s (%s)\n", m.c_str(), ref.c_str());
      refused++;
      continue;
    }
    named++;
    // A template function's name comes after its return type; the cut took
    // the '(' of "operator()" and "(anonymous namespace)" for the
    // parameters'.
    if (ref == out || (out.size() > ref.size() && out.compare(0, ref.size(), ref) == 0 && out[ref.size()] == '(') || (ref.size() > out.size() && ref.compare(ref.size() - out.size(), out.size(), out) == 0 &&
                       ref[ref.size() - out.size() - 1] == ' ')) {
      same++;
    } else {
      CHECK(false, "%s: %s, libstdc++ %s", m.c_str(), out.c_str(), ref.c_str());
    }
  }
  std::printf("%s: %zu C++ symbols; %zu named, %zu of them as libstdc++ does; %zu shown mangled; "
              "%zu libstdc++ does not demangle; slowest %.1f us\n",
              path, names.size(), named, same, refused, theirs_failed, worst * 1e6);
  // Nearly all of HotSpot's names are in the forms known here.
  CHECK(named >= (names.size() - theirs_failed) * 95 / 100, "only %zu of %zu named", named, names.size());
  elf_end(elf);
  close(fd);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  unsigned seed = 1;
  for (int i = 1; i < argc; i++) {
    if (!std::strcmp(argv[i], "--seed") && i + 1 < argc) {
      seed = static_cast<unsigned>(std::strtoul(argv[++i], nullptr, 10));
    } else if (!std::strcmp(argv[i], "--against") && i + 1 < argc) {
      const int r = against(argv[++i]);
      if (r) return r;
      std::printf("%s\n", failures ? "FAILED" : "ok");
      return failures ? 1 : 0;
    } else {
      std::fprintf(stderr, "usage: demangle_test [--seed N] | --against ELF\n");
      return 2;
    }
  }
  known();
  bombs();
  random_input(seed);
  std::printf("%s\n", failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}
