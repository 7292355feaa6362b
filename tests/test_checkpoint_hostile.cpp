// A checkpoint is untrusted input (issue 13): hostile files, each made here from a valid checkpoint with
// the HDF5 C API, are refused by name and reason, without following anything outside the file, hanging,
// or allocating what the file does not store.
#include <doctest/doctest.h>
#include <hdf5.h>
#include <sys/stat.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "hostile_files.h"
#include "test_util.h"
#include "train/checkpoint/checkpoint.h"

namespace fs = std::filesystem;
using rpb::load_checkpoint;
using rpb::testing::contains;
using rpb::testing::edit_hdf5;
using rpb::testing::error_of;
using rpb::testing::in_child;
using rpb::testing::refusal;
using rpb::testing::replace_dataset;
using rpb::testing::saved_checkpoint;
using rpb::testing::TempDir;

using rpb::testing::open_hdf5_objects;

namespace {


/// The error load_checkpoint(path) throws; every handle it opened is closed again.
std::string load_error(const std::string& path) {
  const std::string e = error_of([&] { load_checkpoint(path); });
  CHECK(open_hdf5_objects() == 0);
  return e;
}

/// A new FIFO dir/fifo.h5: opening it for reading blocks until a writer comes.
std::string make_fifo(const TempDir& dir) {
  const std::string fifo = dir.file("fifo.h5");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  return fifo;
}

/// A creation property list for a new dataset; `set` adds to it.
hid_t dcpl_with(const std::function<void(hid_t)>& set) {
  const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  set(dcpl);
  return dcpl;
}

// A user-defined link class whose links lead to the object "w" of the group holding them.
hid_t traverse_to_w(const char*, hid_t group, const void*, std::size_t, hid_t lapl, hid_t) {
  return H5Oopen(group, "w", lapl);
}
const H5L_class_t kLinkToW = {H5L_LINK_CLASS_T_VERS,
                              static_cast<H5L_type_t>(100),
                              "rpb test link",
                              nullptr,
                              nullptr,
                              nullptr,
                              traverse_to_w,
                              nullptr,
                              nullptr};

}  // namespace

// ----------------------------------------------------------------- links ----

TEST_CASE("hostile checkpoint: an external link is refused, not followed") {
  TempDir dir("hostile");
  const std::string other = saved_checkpoint(dir, "other.h5");
  for (const std::string name : {"/params/w", "/optim"}) {  // a dataset, a whole group
    CAPTURE(name);
    const std::string path = saved_checkpoint(dir, "ckpt.h5");
    edit_hdf5(path, [&](hid_t f) {
      H5Ldelete(f, name.c_str(), H5P_DEFAULT);
      REQUIRE(H5Lcreate_external(other.c_str(), name.c_str(), f, name.c_str(), H5P_DEFAULT, H5P_DEFAULT) >= 0);
    });
    CHECK(contains(load_error(path), refusal(path, name + " is an external link (to " + other + ":" + name +
                                                       "); rpb reads only objects inside the file")));
  }
}

TEST_CASE("hostile checkpoint: an external link to a FIFO is refused without opening the FIFO") {
  TempDir dir("hostile");
  const std::string fifo = make_fifo(dir);
  const std::string path = saved_checkpoint(dir, "ckpt.h5");
  edit_hdf5(path, [&](hid_t f) {
    H5Ldelete(f, "/params/w", H5P_DEFAULT);
    REQUIRE(H5Lcreate_external(fifo.c_str(), "/x", f, "/params/w", H5P_DEFAULT, H5P_DEFAULT) >= 0);
  });
  // Opening the FIFO would block until a writer comes: the child is killed after 10 s if it does.
  const auto r = in_child([&] { load_checkpoint(path); });
  REQUIRE_MESSAGE(r.finished, "the load hung (or crashed) on an external link to a FIFO");
  CHECK(contains(r.error, refusal(path, "/params/w is an external link (to " + fifo +
                                            ":/x); rpb reads only objects inside the file")));
}

TEST_CASE("hostile checkpoint: a soft link and a user-defined link are refused") {
  TempDir dir("hostile");
  const std::string path = saved_checkpoint(dir, "soft.h5");
  edit_hdf5(path, [&](hid_t f) {
    H5Ldelete(f, "/params/b", H5P_DEFAULT);
    REQUIRE(H5Lcreate_soft("/params/w", f, "/params/b", H5P_DEFAULT, H5P_DEFAULT) >= 0);
  });
  CHECK(contains(load_error(path),
                 refusal(path, "/params/b is a soft link (to /params/w); rpb follows only hard links")));

  const std::string ud = saved_checkpoint(dir, "ud.h5");
  REQUIRE(H5Lregister(&kLinkToW) >= 0);
  edit_hdf5(ud, [&](hid_t f) {
    H5Ldelete(f, "/params/b", H5P_DEFAULT);
    REQUIRE(H5Lcreate_ud(f, "/params/b", static_cast<H5L_type_t>(100), nullptr, 0, H5P_DEFAULT, H5P_DEFAULT) >= 0);
  });
  const std::string e = load_error(ud);
  H5Lunregister(static_cast<H5L_type_t>(100));
  CHECK(contains(e, refusal(ud, "/params/b is a user-defined link (type 100); rpb follows only hard links")));
}

TEST_CASE("hostile checkpoint: a link name holding '/' is refused before HDF5 resolves it as a path") {
  TempDir dir("hostile");
  const std::string fifo = make_fifo(dir);
  const std::string path = saved_checkpoint(dir, "slash.h5");
  // /params holds "a/x" before "a", an external link to the FIFO: resolving "a/x" would follow "a".
  edit_hdf5(path, [&](hid_t f) {
    H5Ldelete(f, "/params", H5P_DEFAULT);
    const hid_t gcpl = H5Pcreate(H5P_GROUP_CREATE);
    H5Pset_link_creation_order(gcpl, H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED);  // rpb then lists links
    H5Pset_attr_creation_order(gcpl, H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED);  // in creation order
    H5Pset_est_link_info(gcpl, 4, 8);  // room for the links in the group's first header chunk
    const hid_t params = H5Gcreate2(f, "/params", H5P_DEFAULT, gcpl, H5P_DEFAULT);
    const hsize_t one = 1;
    const hid_t space = H5Screate_simple(1, &one, nullptr);
    H5Dclose(H5Dcreate2(params, "aXx", H5T_NATIVE_FLOAT, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    REQUIRE(H5Lcreate_external(fifo.c_str(), "/x", params, "a", H5P_DEFAULT, H5P_DEFAULT) >= 0);
    H5Sclose(space);
    H5Gclose(params);
    H5Pclose(gcpl);
  });
  rpb::testing::rename_link_in_file(path, "/params", "aXx", "a/x");
  const auto r = in_child([&] { load_checkpoint(path); });
  REQUIRE_MESSAGE(r.finished, "the load hung (or crashed) on a link named a/x");
  CHECK(contains(r.error, refusal(path, "invalid name \"a/x\" under /params (names must be non-empty, without '/', "
                                        "and not \".\")")));
}

// --------------------------------------------------- objects reached twice ----

TEST_CASE("hostile checkpoint: a hard-link cycle and a shared dataset are refused") {
  TempDir dir("hostile");
  const std::string cycle = saved_checkpoint(dir, "cycle.h5");
  edit_hdf5(cycle, [](hid_t f) {
    REQUIRE(H5Lcreate_hard(f, "/optim", f, "/optim/exp_avg/loop", H5P_DEFAULT, H5P_DEFAULT) >= 0);
  });
  CHECK(contains(load_error(cycle),
                 refusal(cycle,
                         "/optim/exp_avg/loop is the same object as /optim (hard links that make a cycle or "
                         "share an object); rpb reads each object once")));

  const std::string shared = saved_checkpoint(dir, "shared.h5");
  edit_hdf5(shared,
            [](hid_t f) { REQUIRE(H5Lcreate_hard(f, "/params/w", f, "/params/w2", H5P_DEFAULT, H5P_DEFAULT) >= 0); });
  CHECK(contains(load_error(shared),
                 refusal(shared,
                         "/params/w2 is the same object as /params/w (hard links that make a cycle or share "
                         "an object); rpb reads each object once")));
}

TEST_CASE("hostile checkpoint: groups linked twice at each of 25 levels are refused at once, not walked 2^25 times") {
  TempDir dir("hostile");
  const std::string path = saved_checkpoint(dir, "dag.h5");
  constexpr int kLevels = 25;
  edit_hdf5(path, [&](hid_t f) {
    std::vector<hid_t> g;
    for (int i = 0; i <= kLevels; ++i) g.push_back(H5Gcreate_anon(f, H5P_DEFAULT, H5P_DEFAULT));
    for (int i = 0; i < kLevels; ++i)
      for (const char* name : {"a", "b"})
        REQUIRE(H5Lcreate_hard(g[i + 1], ".", g[i], name, H5P_DEFAULT, H5P_DEFAULT) >= 0);
    REQUIRE(H5Lcreate_hard(g[0], ".", f, "/optim/dag", H5P_DEFAULT, H5P_DEFAULT) >= 0);
    for (hid_t id : g) H5Gclose(id);
  });
  std::string first = "/optim/dag", again = "/optim/dag";
  for (int i = 0; i < kLevels; ++i) first += "/a";
  for (int i = 1; i < kLevels; ++i) again += "/a";
  again += "/b";
  const auto r = in_child([&] { load_checkpoint(path); });
  REQUIRE_MESSAGE(r.finished, "the load took more than 10 s (or crashed) on a DAG of shared groups");
  CHECK(contains(r.error, refusal(path, again + " is the same object as " + first +
                                            " (hard links that make a cycle or share an object); rpb reads each "
                                            "object once")));
}

// --------------------------------------------------------------- storage ----

TEST_CASE("hostile checkpoint: external raw storage is refused before anything is read from it") {
  TempDir dir("hostile");
  const std::string secret = dir.file("secret.bin");
  std::ofstream(secret) << "private key material......";
  for (const std::string& target : {secret, std::string("/dev/zero")}) {
    CAPTURE(target);
    const std::string path = saved_checkpoint(dir, "external.h5");
    // The CRC of 24 zero bytes: /dev/zero would load silently as zeros without the check.
    const std::vector<float> zeros(6, 0.0f);
    const uint32_t crc = target == secret ? 0 : rpb::crc32_ieee(zeros.data(), 24);
    edit_hdf5(path, [&](hid_t f) {
      const hid_t dcpl = dcpl_with([&](hid_t p) { REQUIRE(H5Pset_external(p, target.c_str(), 0, 24) >= 0); });
      replace_dataset(f, "/params/w", H5T_NATIVE_FLOAT, {2, 3}, dcpl, nullptr, crc);
      H5Pclose(dcpl);
    });
    const std::string e = load_error(path);
    CHECK(contains(e, refusal(path, "dataset /params/w keeps its data in an external file (" + target +
                                        "); rpb reads only data stored inside the file")));
    CHECK(!contains(e, "computed"));  // no CRC of another file's bytes
  }
}

TEST_CASE("hostile checkpoint: a virtual dataset is refused before its sources are opened") {
  TempDir dir("hostile");
  const std::string other = saved_checkpoint(dir, "other.h5");
  const std::string fifo = make_fifo(dir);
  for (const std::string& source : {other, fifo}) {
    CAPTURE(source);
    const std::string path = saved_checkpoint(dir, "virtual.h5");
    edit_hdf5(path, [&](hid_t f) {
      const hsize_t dims[2] = {2, 3};
      const hid_t space = H5Screate_simple(2, dims, nullptr);
      const hid_t dcpl =
          dcpl_with([&](hid_t p) { REQUIRE(H5Pset_virtual(p, space, source.c_str(), "/params/w", space) >= 0); });
      replace_dataset(f, "/params/w", H5T_NATIVE_FLOAT, {2, 3}, dcpl, nullptr, rpb::testing::w_crc());
      H5Pclose(dcpl);
      H5Sclose(space);
    });
    const auto r = in_child([&] { load_checkpoint(path); });
    REQUIRE_MESSAGE(r.finished, "the load hung (or crashed) on a virtual dataset");
    CHECK(contains(r.error, refusal(path,
                                    "dataset /params/w is a virtual dataset (its data lives in other datasets "
                                    "or files); rpb reads only data stored inside the file")));
  }
}

TEST_CASE("hostile checkpoint: chunked and compressed datasets are refused with a hint, compact ones load") {
  TempDir dir("hostile");
  const std::string hint =
      "; rpb reads contiguous and compact datasets (what rpb and h5py write by default): re-save it without "
      "chunking or compression";
  const std::string path = saved_checkpoint(dir, "chunked.h5");
  const hsize_t chunk[2] = {1, 3};
  edit_hdf5(path, [&](hid_t f) {
    const hid_t dcpl = dcpl_with([&](hid_t p) { REQUIRE(H5Pset_chunk(p, 2, chunk) >= 0); });
    replace_dataset(f, "/params/w", H5T_NATIVE_FLOAT, {2, 3}, dcpl, rpb::testing::w_values().data(),
                    rpb::testing::w_crc());
    H5Pclose(dcpl);
  });
  CHECK(contains(load_error(path), refusal(path, "dataset /params/w is chunked" + hint)));

  edit_hdf5(path, [&](hid_t f) {
    const hid_t dcpl = dcpl_with([&](hid_t p) {
      REQUIRE(H5Pset_chunk(p, 2, chunk) >= 0);
      REQUIRE(H5Pset_deflate(p, 6) >= 0);
    });
    replace_dataset(f, "/params/w", H5T_NATIVE_FLOAT, {2, 3}, dcpl, rpb::testing::w_values().data(),
                    rpb::testing::w_crc());
    H5Pclose(dcpl);
  });
  CHECK(contains(load_error(path), refusal(path, "dataset /params/w is chunked and filtered (deflate)" + hint)));

  edit_hdf5(path, [&](hid_t f) {
    const hid_t dcpl = dcpl_with([&](hid_t p) { REQUIRE(H5Pset_layout(p, H5D_COMPACT) >= 0); });
    replace_dataset(f, "/params/w", H5T_NATIVE_FLOAT, {2, 3}, dcpl, rpb::testing::w_values().data(),
                    rpb::testing::w_crc());
    H5Pclose(dcpl);
  });
  CHECK(load_error(path).empty());
  for (const auto& [name, t] : load_checkpoint(path).params)
    if (name == "w") CHECK(t.to_vector() == std::vector<double>{1, 2, 3, 4, 5, 6});
}

TEST_CASE("hostile checkpoint: a dataset declaring 2^40 elements it does not store allocates nothing") {
  TempDir dir("hostile");
  const std::string path = saved_checkpoint(dir, "huge.h5");
  edit_hdf5(path, [](hid_t f) {
    replace_dataset(f, "/params/w", H5T_NATIVE_FLOAT, {hsize_t{1} << 40}, H5P_DEFAULT, nullptr, 0);
  });
  CHECK(fs::file_size(path) < 100000);
  const std::size_t live = rpb::live_memory_bytes();
  rpb::reset_peak_memory();
  CHECK(contains(load_error(path), refusal(path,
                                           "dataset /params/w stores 0 bytes, its shape [1099511627776] float32 "
                                           "needs 4398046511104 (its data was never written: it would read as "
                                           "fill values)")));
  CHECK(rpb::peak_memory_bytes() - live < 4096);  // /params/b is read before /params/w, and is 12 bytes
}

TEST_CASE("hostile checkpoint: /metrics/step declaring 2^28 entries it does not store allocates nothing") {
  TempDir dir("hostile");
  const std::string path = saved_checkpoint(dir, "metrics.h5");
  edit_hdf5(path, [](hid_t f) {
    replace_dataset(f, "/metrics/step", H5T_NATIVE_INT64, {hsize_t{1} << 28}, H5P_DEFAULT, nullptr, 0);
  });
  const auto r = in_child([&] { load_checkpoint(path); });
  REQUIRE(r.finished);
  CHECK(contains(r.error, refusal(path,
                                  "dataset /metrics/step stores 0 bytes, its shape [268435456] int64 needs "
                                  "2147483648 (its data was never written: it would read as fill values)")));
  CHECK_MESSAGE(r.memory_growth_kb < 64 * 1024, "the load's resident memory grew by ", r.memory_growth_kb, " kB");
}

TEST_CASE("hostile checkpoint: contiguous data past the end of the file is refused before reading") {
  TempDir dir("hostile");
  const std::string path = saved_checkpoint(dir, "past.h5");
  const auto size = fs::file_size(path);
  rpb::testing::move_data_address(path, "/params/w", size - 8);
  CHECK(fs::file_size(path) == size);
  CHECK(contains(load_error(path),
                 refusal(path, "dataset /params/w: its 24 bytes at offset " + std::to_string(size - 8) +
                                   " lie past the end of the file (" + std::to_string(size) + " bytes)")));
}

// ------------------------------------------------------------ attributes ----

namespace {

/// Replaces the string attribute `name` of `obj` by `value`, fixed-length or variable-length (as h5py writes),
/// without the CRC-32 attribute rpb writes beside it (as a string h5py wrote).
void put_string_attr(hid_t obj, const char* name, const std::string& value, bool variable) {
  if (H5Aexists(obj, name) > 0) REQUIRE(H5Adelete(obj, name) >= 0);
  const std::string crc = std::string(name) + ".crc32";
  if (H5Aexists(obj, crc.c_str()) > 0) REQUIRE(H5Adelete(obj, crc.c_str()) >= 0);
  const hid_t type = H5Tcopy(H5T_C_S1);
  H5Tset_size(type, variable ? H5T_VARIABLE : value.size() + 1);
  H5Tset_cset(type, H5T_CSET_UTF8);
  const hid_t space = H5Screate(H5S_SCALAR);
  const hid_t attr = H5Acreate2(obj, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
  REQUIRE(attr >= 0);
  const char* text = value.c_str();
  REQUIRE(H5Awrite(attr, type, variable ? static_cast<const void*>(&text) : text) >= 0);
  H5Aclose(attr);
  H5Sclose(space);
  H5Tclose(type);
}

/// Adds the uint32 attribute `name` to the root of `file`.
void write_crc(hid_t file, const char* name, uint32_t value) {
  const hid_t space = H5Screate(H5S_SCALAR);
  const hid_t attr = H5Acreate2(file, name, H5T_NATIVE_UINT32, space, H5P_DEFAULT, H5P_DEFAULT);
  REQUIRE(attr >= 0);
  REQUIRE(H5Awrite(attr, H5T_NATIVE_UINT32, &value) >= 0);
  H5Aclose(attr);
  H5Sclose(space);
}

/// Writes the one-value int64 attribute `name` of the object at `path`.
void put_int_attr(hid_t file, const char* path, const char* name, int64_t value) {
  // H5Aopen_by_name(file, "/optim", "step") writes the root's "step" here (HDF5 1.10.8): open the object.
  const hid_t obj = H5Oopen(file, path, H5P_DEFAULT);
  const hid_t attr = H5Aopen(obj, name, H5P_DEFAULT);
  REQUIRE(attr >= 0);
  REQUIRE(H5Awrite(attr, H5T_NATIVE_INT64, &value) >= 0);
  H5Aclose(attr);
  H5Oclose(obj);
}

}  // namespace

TEST_CASE("hostile checkpoint: a config over 1 MiB is refused, a variable-length one (h5py) loads") {
  TempDir dir("hostile");
  const std::string path = saved_checkpoint(dir, "config.h5");
  const std::string big(2u << 20, '#');
  // A fixed-length attribute over 64 KiB moves the root's attributes to dense storage, where rpb reads only
  // fixed-length strings (train/checkpoint/hdf5_vlen.h): the other strings as rpb wrote them before they were variable.
  edit_hdf5(path, [&](hid_t f) {
    put_string_attr(f, "rpb_version", "0.1", false);
    put_string_attr(f, "created", "2026-11-23T00:00:00Z", false);
    put_string_attr(f, "commit", "unknown", false);
    put_string_attr(f, "config", big, false);
  });
  CHECK(contains(load_error(path),
                 refusal(path, "attribute config of / is 2097153 bytes long, more than the 1048576 rpb reads")));
  edit_hdf5(path, [&](hid_t f) { put_string_attr(f, "config", big, true); });
  CHECK(contains(load_error(path),
                 refusal(path, "attribute config of / is 2097152 bytes long, more than the 1048576 rpb reads")));
  edit_hdf5(path, [&](hid_t f) { put_string_attr(f, "config", "[run]\nsteps = 4\n", true); });
  CHECK(load_checkpoint(path).config_text == "[run]\nsteps = 4\n");
  // A string changed without its CRC-32 attribute is refused.
  edit_hdf5(path, [&](hid_t f) { write_crc(f, "config.crc32", 12345); });
  CHECK(contains(load_error(path), "checkpoint " + path + ": attribute config of /: CRC-32 mismatch (stored 12345, "
                                   "computed 3818337721): the file is damaged, or the string was changed without its "
                                   "config.crc32 attribute"));

  // save_checkpoint refuses what load_checkpoint would.
  rpb::Checkpoint c = rpb::testing::small_checkpoint();
  c.config_text.assign((1u << 20) + 1, '#');
  CHECK(contains(error_of([&] { rpb::save_checkpoint(dir.file("big.h5"), c); }),
                 "attribute config of / is 1048577 bytes long, more than the 1048576 a checkpoint holds"));
  CHECK(!fs::exists(dir.file("big.h5")));
}

TEST_CASE("hostile checkpoint: negative steps are refused") {
  TempDir dir("hostile");
  const std::string root = saved_checkpoint(dir, "root.h5");
  edit_hdf5(root, [](hid_t f) { put_int_attr(f, "/", "step", -1); });
  CHECK(contains(load_error(root),
                 refusal(root, "attribute step of / is -1; a step is never negative (the file is damaged)")));

  const std::string optim = saved_checkpoint(dir, "optim.h5");
  edit_hdf5(optim, [](hid_t f) { put_int_attr(f, "/optim", "step", -7); });
  CHECK(contains(load_error(optim),
                 refusal(optim, "attribute step of /optim is -7; a step is never negative (the file is damaged)")));

  const std::string metrics = saved_checkpoint(dir, "metrics.h5");
  const std::vector<int64_t> steps = {1, -5, 3};
  edit_hdf5(metrics, [&](hid_t f) {
    replace_dataset(f, "/metrics/step", H5T_NATIVE_INT64, {3}, H5P_DEFAULT, steps.data(),
                    rpb::crc32_ieee(steps.data(), 24));
  });
  CHECK(contains(load_error(metrics),
                 refusal(metrics, "entry 1 of /metrics/step is -5; a step is never negative (the file is damaged)")));
}

// ----------------------------------------------------------------- names ----

TEST_CASE("hostile checkpoint: names from the file are quoted with their escape sequences escaped") {
  TempDir dir("hostile");
  const std::string link = saved_checkpoint(dir, "link.h5");
  edit_hdf5(link, [](hid_t f) {
    REQUIRE(H5Lcreate_soft("/params/w\x1b[2J", f, "/params/evil\x1b[2J", H5P_DEFAULT, H5P_DEFAULT) >= 0);
    REQUIRE(H5Lcreate_external("evil\x1b]0;title\x07.h5", "/x", f, "/buffers/ext\x1b[2J", H5P_DEFAULT, H5P_DEFAULT) >=
            0);
  });
  std::string e = load_error(link);
  CHECK(contains(
      e, refusal(link, "/params/evil\\x1b[2J is a soft link (to /params/w\\x1b[2J); rpb follows only hard links")));
  CHECK(!contains(e, "\x1b"));
  edit_hdf5(link, [](hid_t f) { H5Ldelete(f, "/params/evil\x1b[2J", H5P_DEFAULT); });
  e = load_error(link);
  CHECK(contains(e, refusal(link,
                            "/buffers/ext\\x1b[2J is an external link (to evil\\x1b]0;title\\x07.h5:/x); rpb "
                            "reads only objects inside the file")));
  CHECK(!contains(e, "\x1b"));

  const std::string attr = saved_checkpoint(dir, "attr.h5");
  edit_hdf5(attr, [](hid_t f) {
    const hid_t optim = H5Gopen2(f, "/optim", H5P_DEFAULT);
    put_string_attr(optim, "lr\x1b[2J", "0.1", false);
    H5Gclose(optim);
  });
  e = load_error(attr);
  CHECK(contains(e, refusal(attr, "attribute lr\\x1b[2J of /optim: expected a float, found string")));
  CHECK(!contains(e, "\x1b"));

  // check_params quotes the parameter names of a loaded checkpoint.
  rpb::Checkpoint c = rpb::testing::small_checkpoint();
  c.params.emplace_back("x\x1b[2J", rpb::Tensor::zeros({1}));
  e = error_of([&] { rpb::check_params(c, rpb::testing::small_checkpoint().params, "a.h5"); });
  CHECK(contains(e, "dataset /params/x\\x1b[2J is not a parameter of the model (found [1] float32)"));
  CHECK(!contains(e, "\x1b"));
}
