//===- Npy.cpp - numpy .npy files -----------------------------------------===//

#include "runtime/Npy.h"

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace cleave::rt {

namespace {

/// The value of `key` in the header dict, e.g. 'descr': '<f4'.
bool headerField(const std::string &header, const std::string &key,
                 std::string &value) {
  size_t at = header.find("'" + key + "'");
  if (at == std::string::npos)
    return false;
  at = header.find(':', at);
  if (at == std::string::npos)
    return false;
  ++at;
  while (at < header.size() && header[at] == ' ')
    ++at;
  size_t end = at;
  if (header[at] == '(') {
    end = header.find(')', at);
    if (end == std::string::npos)
      return false;
    value = header.substr(at + 1, end - at - 1);
    return true;
  }
  if (header[at] == '\'') {
    end = header.find('\'', at + 1);
    if (end == std::string::npos)
      return false;
    value = header.substr(at + 1, end - at - 1);
    return true;
  }
  end = header.find_first_of(",}", at);
  value = header.substr(at, end - at);
  return true;
}

int64_t kindSize(const std::string &kind) {
  if (kind.size() < 2)
    return 0;
  return std::atoi(kind.c_str() + 1);
}

} // namespace

std::string npyFileName(const std::string &name) {
  std::string file;
  for (char c : name)
    file += c == '/' ? "%2F" : c == '%' ? "%25" : std::string(1, c);
  return file + ".npy";
}

bool readNpy(const std::string &path, NpyArray &array, std::string &error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "cannot open '" + path + "': " + std::strerror(errno);
    return false;
  }
  char magic[8];
  if (!in.read(magic, 8) || std::memcmp(magic, "\x93NUMPY", 6) != 0) {
    error = "'" + path + "' is not a .npy file (bad magic); save it with "
            "numpy.save";
    return false;
  }
  uint32_t headerLength = 0;
  if (magic[6] == 1) {
    uint16_t length;
    in.read(reinterpret_cast<char *>(&length), 2);
    headerLength = length;
  } else {
    in.read(reinterpret_cast<char *>(&headerLength), 4);
  }
  std::string header(headerLength, '\0');
  if (!in || !in.read(header.data(), headerLength)) {
    error = "'" + path + "' has a truncated .npy header";
    return false;
  }
  std::string descr, order, shapeText;
  if (!headerField(header, "descr", descr) ||
      !headerField(header, "fortran_order", order) ||
      !headerField(header, "shape", shapeText)) {
    error = "'" + path + "' has a malformed .npy header: " + header;
    return false;
  }
  if (order.find("True") != std::string::npos) {
    error = "'" + path + "' is in Fortran order; save a C-order array "
            "(numpy.ascontiguousarray)";
    return false;
  }
  if (descr.size() < 3 || descr[0] == '>') {
    error = "'" + path + "' has dtype '" + descr +
            "', which is not a little-endian numeric type";
    return false;
  }
  array.kind = descr.substr(1);
  array.shape.clear();
  std::stringstream dims(shapeText);
  std::string item;
  int64_t bytes = kindSize(array.kind);
  while (std::getline(dims, item, ',')) {
    if (item.find_first_not_of(' ') == std::string::npos)
      continue;
    char *end = nullptr;
    errno = 0;
    long long dim = std::strtoll(item.c_str(), &end, 10);
    bool valid = end != item.c_str() && errno == 0 && dim >= 0 &&
                 std::string(end).find_first_not_of(' ') == std::string::npos;
    if (!valid || (dim > 0 && bytes > INT64_MAX / dim)) {
      error = "'" + path + "' has the invalid shape (" + shapeText +
              ") in its .npy header; save it again with numpy.save";
      return false;
    }
    array.shape.push_back(dim);
    bytes *= dim;
  }
  // Compare with the file's size before allocating: a corrupt header must
  // not ask for terabytes.
  std::streamoff dataStart = in.tellg();
  in.seekg(0, std::ios::end);
  std::streamoff available = in.tellg() - dataStart;
  in.seekg(dataStart);
  if (available < bytes) {
    error = "'" + path + "' is truncated: its header promises " +
            std::to_string(bytes) + " bytes of data, the file holds " +
            std::to_string(available);
    return false;
  }
  array.data.resize(bytes);
  if (!in.read(array.data.data(), bytes)) {
    error = "'" + path + "' cannot be read: " + std::strerror(errno);
    return false;
  }
  return true;
}

bool writeNpy(const std::string &path, const std::string &kind,
              const std::vector<int64_t> &shape, const void *data,
              int64_t bytes, std::string &error) {
  std::string dims;
  for (int64_t d : shape)
    dims += std::to_string(d) + ", ";
  if (shape.size() > 1)
    dims.resize(dims.size() - 2);
  std::string header = "{'descr': '<" + kind +
                       "', 'fortran_order': False, 'shape': (" + dims + "), }";
  // Pad so that the data starts on a 64-byte boundary, as numpy does.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  uint16_t length = header.size();
  out.write("\x93NUMPY\x01\x00", 8);
  out.write(reinterpret_cast<const char *>(&length), 2);
  out.write(header.data(), header.size());
  out.write(static_cast<const char *>(data), bytes);
  if (!out) {
    error = "cannot write '" + path + "': " + std::strerror(errno);
    return false;
  }
  return true;
}

} // namespace cleave::rt
