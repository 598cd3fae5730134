// The visitor behind results_json*.cc, for those files only: a record lists its fields once
// in a fields(v, r) function, and Writer and Reader walk that list in both directions. Each
// including file gets its own copy in an unnamed namespace, and its fields() overloads (in the
// same unnamed namespace) are found by argument-dependent lookup through the visitor, so a
// record is mapped in the file that includes this header and defines its fields().
#pragma once
#include <concepts>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "base/errors.h"
#include "base/nullable.h"
#include "harness/record/point_record.h"

namespace tpb {

namespace {

using oj = nlohmann::ordered_json;

// `R` is T or const T: the writer walks a const record, the reader a mutable one.
template <class R, class T>
concept Is = std::same_as<std::remove_const_t<R>, T>;

// A record both results_json.cc and results_json_coll.cc map (inside their points).
template <class V, Is<SkewRecord> R>
void fields(V& v, R& r) {
  v("p50", r.p50);
  v("p95", r.p95);
  v("max", r.max);
}

// The clock sync fields both kinds of point report (ClockSyncRecord, CollClockSyncRecord); a
// model point adds its per-rank offsets after them.
template <class V, class R>
void clock_sync_fields(V& v, R& r) {
  v("method", r.method);
  v("max_offset_s", r.max_offset_s);
  v("max_uncertainty_s", r.max_uncertainty_s);
  v("drift_ppm", r.drift_ppm);
  v("clock_condition_violations", r.clock_condition_violations);
}

struct Writer;
template <class T>
concept Record = requires(Writer& w, const T& t) {
  fields(w, t);
};

template <class T>
struct IsVector : std::false_type {};
template <class T>
struct IsVector<std::vector<T>> : std::true_type {};
// A map by name is an object whose keys are data (calibrate's peaks by dtype), in the map's
// order: sorted (std::map) or as inserted (nlohmann::ordered_map).
template <class T>
struct IsMap : std::false_type {};
template <class T>
struct IsMap<std::map<std::string, T>> : std::true_type {};
template <class T>
struct IsMap<nlohmann::ordered_map<std::string, T>> : std::true_type {};

// Appends each field to `j` in the order fields() names them.
struct Writer {
  oj& j;
  template <class T>
  static oj encode(const T& x) {
    if constexpr (Record<T>) {
      oj o = oj::object();
      Writer w{o};
      fields(w, x);
      return o;
    } else if constexpr (IsVector<T>::value) {
      oj a = oj::array();
      for (const auto& e : x) a.push_back(encode(e));
      return a;
    } else if constexpr (IsMap<T>::value) {
      oj o = oj::object();
      for (const auto& [k, e] : x) o[k] = encode(e);
      return o;
    } else if constexpr (std::is_same_v<T, PointStatus>) {
      return point_status_name(x);
    } else {
      return oj(x);  // numbers, strings, bools, opaque blocks; NaN prints as null
    }
  }
  template <class T>
  void operator()(const char* k, const T& x) {
    j[k] = encode(x);
  }
  template <class T>
  void operator()(const char* k, const std::optional<T>& x) {
    if (x) (*this)(k, *x);
  }
  template <class T>
  void operator()(const char* k, const Nullable<T>& x) {
    j[k] = x ? encode(*x) : oj(nullptr);
  }
};

// Reads each field from `j`; a missing required field throws (json's out_of_range).
struct Reader {
  const oj& j;
  template <class T>
  static void decode(const oj& in, T& x) {
    if constexpr (Record<T>) {
      Reader r{in};
      fields(r, x);
    } else if constexpr (IsVector<T>::value) {
      x.clear();
      for (const auto& e : in.template get_ref<const oj::array_t&>()) decode(e, x.emplace_back());
    } else if constexpr (IsMap<T>::value) {
      x.clear();
      for (const auto& [k, e] : in.template get_ref<const oj::object_t&>()) decode(e, x[k]);
    } else if constexpr (std::is_same_v<T, PointStatus>) {
      x = point_status_from_name(in.get<std::string>());
    } else if constexpr (std::is_same_v<T, double>) {
      x = in.is_null() ? std::numeric_limits<double>::quiet_NaN() : in.get<double>();
    } else if constexpr (std::is_same_v<T, oj>) {
      x = in;
    } else {
      x = in.get<T>();
    }
  }
  template <class T>
  void operator()(const char* k, T& x) {
    decode(j.at(k), x);
  }
  template <class T>
  void operator()(const char* k, std::optional<T>& x) {
    x.reset();
    if (!j.contains(k)) return;
    decode(j[k], x.emplace());
  }
  template <class T>
  void operator()(const char* k, Nullable<T>& x) {
    x.reset();
    if (!j.contains(k) || j[k].is_null()) return;
    decode(j[k], x.emplace());
  }
};

// The key fields() gives a member of R: the field lists are the one spelling of a key, so a
// reader that picks single fields out of a document (leniently, where read_record is strict)
// asks them. nullptr for a member fields() does not list.
struct KeyOf {
  const void* member;
  const char* key = nullptr;
  template <class T>
  void operator()(const char* k, const T& x) {
    if (static_cast<const void*>(&x) == member) key = k;
  }
};
template <class R, class M>
const char* key_of(M R::*member) {
  static const R r{};
  KeyOf v{&(r.*member)};
  fields(v, r);
  return v.key;
}

template <class T>
T read_record(const oj& j, const char* what) {
  T r;
  try {
    Reader::decode(j, r);
  } catch (const nlohmann::json::exception& e) {
    throw BadInput(std::string("not a ") + what + " record: " + e.what());
  }
  return r;
}

// For documents that may hold other kinds of records: nothing where `j` is not a T.
template <class T>
std::optional<T> try_read_record(const oj& j, const char* what) {
  try {
    return read_record<T>(j, what);
  } catch (const BadInput&) {
    return std::nullopt;
  }
}

}  // namespace

}  // namespace tpb

// A record's two entry points in results_json.h, defined in namespace tpb where its fields()
// are: to_json writes it through Writer, and `reader` reads it back strictly, a BadInput naming
// `what` when the document is not one. A macro, as each reader has its own name in the header.
#define TPB_RECORD_JSON(Type, reader, what) \
  oj to_json(const Type& r) {               \
    return Writer::encode(r);               \
  }                                         \
  Type reader(const oj& j) {                \
    return read_record<Type>(j, what);      \
  }
