//===- Npy.cpp - numpy .npy files -----------------------------------------===//

#include "runtime/Npy.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <string_view>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace cleave::rt {

namespace {

/// The longest header read: numpy's own reader refuses more than 10000
/// bytes by default; the bound keeps a corrupt length from allocating.
constexpr uint64_t kMaxHeaderBytes = 65536;
/// numpy allows at most 64 dimensions.
constexpr size_t kMaxRank = 64;

/// `text` for a message: at most 80 bytes, control and non-ASCII bytes as
/// \xNN, so that a hostile header cannot garble the terminal.
std::string printable(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size() && i < 80; ++i) {
    unsigned char c = text[i];
    if (c >= 0x20 && c < 0x7F) {
      out += static_cast<char>(c);
    } else {
      char escaped[5];
      std::snprintf(escaped, sizeof(escaped), "\\x%02X", c);
      out += escaped;
    }
  }
  return text.size() > 80 ? out + "..." : out;
}

uint64_t readLittleEndian(const char *bytes, int count) {
  uint64_t value = 0;
  for (int i = count - 1; i >= 0; --i)
    value = value << 8 | static_cast<unsigned char>(bytes[i]);
  return value;
}

/// The size in bytes of a plain numeric numpy kind ("f4", "i8", "b1", ...);
/// 0 for anything else (strings, objects, dates, structured types).
int64_t kindSize(std::string_view kind) {
  if (kind.size() < 2 ||
      std::string_view("biufc").find(kind[0]) == std::string_view::npos ||
      kind.find_first_not_of("0123456789", 1) != std::string_view::npos ||
      kind.size() > 3)
    return 0;
  int64_t size = std::atoi(std::string(kind.substr(1)).c_str());
  bool valid = kind[0] == 'b' ? size == 1
               : kind[0] == 'c'
                   ? size == 8 || size == 16
                   : size == 1 || size == 2 || size == 4 || size == 8;
  return valid ? size : 0;
}

/// Where the data of a .npy file starts, what it holds, and how long it is.
struct NpyLayout {
  std::string kind;
  std::vector<int64_t> shape;
  uint64_t dataOffset = 0;
  int64_t dataBytes = 0;
};

/// A parser of the header: the Python dict literal numpy.save writes,
/// {'descr': '<f4', 'fortran_order': False, 'shape': (8, 3), }, padded with
/// spaces and a newline. Each key exactly once, nothing else.
class HeaderParser {
public:
  HeaderParser(std::string_view text, const std::string &path)
      : text(text), path(path) {}

  bool parse(NpyLayout &layout, std::string &error) {
    bool seen[3] = {false, false, false};
    static const char *const keys[3] = {"descr", "fortran_order", "shape"};
    std::string descr;
    bool fortranOrder = false;
    skipSpace();
    if (!consume('{'))
      return malformed("it does not start with '{'", error);
    skipSpace();
    while (!consume('}')) {
      std::string key;
      if (!parseString(key))
        return malformed("expected a quoted key at byte " + std::to_string(at),
                         error);
      int index = 0;
      while (index < 3 && key != keys[index])
        ++index;
      if (index == 3)
        return malformed("the unknown key '" + printable(key) + "'", error);
      if (seen[index])
        return malformed("the key '" + key + "' appears twice", error);
      seen[index] = true;
      skipSpace();
      if (!consume(':'))
        return malformed("expected ':' after '" + key + "'", error);
      skipSpace();
      if (index == 0 && !parseString(descr))
        return malformed("'descr' is not a quoted dtype (structured dtypes "
                         "are not supported)",
                         error);
      if (index == 1 && !parseBool(fortranOrder))
        return malformed("'fortran_order' is neither True nor False", error);
      if (index == 2 && !parseShape(layout, error))
        return false;
      skipSpace();
      if (consume(','))
        skipSpace();
      else if (at >= text.size() || text[at] != '}')
        return malformed("expected ',' or '}' at byte " + std::to_string(at),
                         error);
    }
    skipSpace();
    if (at != text.size()) {
      std::string_view rest = text.substr(at);
      rest = rest.substr(0, rest.find_last_not_of(" \t\r\n") + 1);
      return malformed("text after its closing '}': '" + printable(rest) + "'",
                       error);
    }
    for (int i = 0; i < 3; ++i)
      if (!seen[i])
        return malformed("no key '" + std::string(keys[i]) + "'", error);
    if (fortranOrder) {
      error = "'" + path +
              "' is in Fortran order; save a C-order array "
              "(numpy.ascontiguousarray)";
      return false;
    }
    bool littleEndian = descr.size() >= 2 &&
                        (descr[0] == '<' ||
                         (descr[0] == '|' && kindSize(descr.substr(1)) == 1));
    int64_t itemSize = littleEndian ? kindSize(descr.substr(1)) : 0;
    if (itemSize == 0) {
      error = "'" + path + "' has dtype '" + printable(descr) +
              "', which is not a little-endian numeric type; save it again "
              "with numpy.save after an .astype to the type the model needs";
      return false;
    }
    layout.kind = descr.substr(1);
    // The element count and byte count must fit in int64.
    int64_t bytes = itemSize;
    for (int64_t dim : layout.shape) {
      if (dim > 0 && bytes > INT64_MAX / dim)
        return invalidShape(error);
      bytes *= dim;
    }
    layout.dataBytes = bytes;
    return true;
  }

private:
  std::string_view text;
  const std::string &path;
  size_t at = 0;
  /// Where the shape's text starts, for messages.
  size_t shapeStart = 0;

  bool malformed(const std::string &what, std::string &error) {
    error = "'" + path + "' has a malformed .npy header (" + what +
            "); save it again with numpy.save";
    return false;
  }

  bool invalidShape(std::string &error) {
    // The shape's text: to its closing bracket, or to the next ',' or '}'.
    char open = shapeStart < text.size() ? text[shapeStart] : '\0';
    bool bracketed = open == '(' || open == '[';
    size_t end = bracketed ? text.find(open == '(' ? ')' : ']', shapeStart)
                           : text.find_first_of(",}", shapeStart);
    std::string_view shape =
        text.substr(shapeStart, end == std::string_view::npos
                                    ? std::string_view::npos
                                    : end - shapeStart + bracketed);
    if (shape.empty())
      return malformed("'shape' has no value", error);
    error = "'" + path + "' has the invalid shape " + printable(shape) +
            " in its .npy header; save it again with numpy.save";
    return false;
  }

  void skipSpace() {
    while (at < text.size() && (text[at] == ' ' || text[at] == '\t' ||
                                text[at] == '\n' || text[at] == '\r'))
      ++at;
  }

  bool consume(char c) {
    if (at >= text.size() || text[at] != c)
      return false;
    ++at;
    return true;
  }

  bool consumeWord(std::string_view word) {
    if (text.substr(at, word.size()) != word)
      return false;
    at += word.size();
    return true;
  }

  /// A Python string literal without escapes: 'text' or "text".
  bool parseString(std::string &value) {
    if (at >= text.size() || (text[at] != '\'' && text[at] != '"'))
      return false;
    char quote = text[at];
    size_t end = text.find(quote, at + 1);
    if (end == std::string_view::npos)
      return false;
    std::string_view body = text.substr(at + 1, end - at - 1);
    if (body.find_first_of("\\\n") != std::string_view::npos)
      return false;
    value = std::string(body);
    at = end + 1;
    return true;
  }

  bool parseBool(bool &value) {
    if (consumeWord("True"))
      value = true;
    else if (consumeWord("False"))
      value = false;
    else
      return false;
    // Not the start of a longer name (Truex).
    return at >= text.size() ||
           !std::isalnum(static_cast<unsigned char>(text[at]));
  }

  /// A tuple of non-negative integers: (), (8,), (8, 3), (8, 3,).
  bool parseShape(NpyLayout &layout, std::string &error) {
    shapeStart = at;
    layout.shape.clear();
    if (!consume('('))
      return invalidShape(error);
    skipSpace();
    if (consume(')'))
      return true;
    while (true) {
      size_t digits = at;
      int64_t dim = 0;
      while (at < text.size() && text[at] >= '0' && text[at] <= '9') {
        int digit = text[at] - '0';
        if (dim > (INT64_MAX - digit) / 10)
          return invalidShape(error);
        dim = dim * 10 + digit;
        ++at;
      }
      if (at == digits || layout.shape.size() == kMaxRank)
        return invalidShape(error);
      layout.shape.push_back(dim);
      skipSpace();
      if (consume(',')) {
        skipSpace();
        if (consume(')'))
          return true;
        continue;
      }
      // (8) is the number 8 in Python, not a tuple.
      if (layout.shape.size() > 1 && consume(')'))
        return true;
      return invalidShape(error);
    }
  }
};

/// Reads the preamble and header of a .npy file from its first `available`
/// bytes; `fileSize` is the whole file's, which bounds every length.
bool parseLayout(const char *bytes, size_t available, uint64_t fileSize,
                 const std::string &path, NpyLayout &layout,
                 std::string &error) {
  if (available < 8 || std::memcmp(bytes, "\x93NUMPY", 6) != 0) {
    error = "'" + path +
            "' is not a .npy file (bad magic); save it with "
            "numpy.save";
    return false;
  }
  int major = static_cast<unsigned char>(bytes[6]);
  if (major < 1 || major > 3) {
    error = "'" + path + "' is a .npy file of format version " +
            std::to_string(major) +
            ", which this program cannot read; save it again with numpy.save";
    return false;
  }
  // Version 1 has a 2-byte header length, versions 2 and 3 a 4-byte one.
  int lengthBytes = major == 1 ? 2 : 4;
  uint64_t preamble = 8 + lengthBytes;
  if (available < preamble) {
    error = "'" + path + "' has a truncated .npy header";
    return false;
  }
  uint64_t headerLength = readLittleEndian(bytes + 8, lengthBytes);
  if (headerLength > kMaxHeaderBytes) {
    error = "'" + path + "' declares a .npy header of " +
            std::to_string(headerLength) + " bytes (at most " +
            std::to_string(kMaxHeaderBytes) +
            " are accepted); the file is corrupt: save it again with "
            "numpy.save";
    return false;
  }
  if (preamble + headerLength > fileSize ||
      preamble + headerLength > available) {
    error = "'" + path + "' has a truncated .npy header: it declares " +
            std::to_string(headerLength) + " bytes, the file holds " +
            std::to_string(fileSize - preamble);
    return false;
  }
  std::string_view header(bytes + preamble, headerLength);
  if (!HeaderParser(header, path).parse(layout, error))
    return false;
  layout.dataOffset = preamble + headerLength;
  // Compared with the file's size before allocating: a corrupt header must
  // not ask for terabytes.
  uint64_t held = fileSize - layout.dataOffset;
  if (held < static_cast<uint64_t>(layout.dataBytes)) {
    error = "'" + path + "' is truncated: its header promises " +
            std::to_string(layout.dataBytes) +
            " bytes of data, the file holds " + std::to_string(held);
    return false;
  }
  return true;
}

} // namespace

std::string npyFileName(const std::string &name) {
  std::string file;
  for (size_t i = 0; i < name.size(); ++i) {
    unsigned char c = name[i];
    if (c == '/' || c == '%' || c < 0x20 || c == 0x7F || (i == 0 && c == '.')) {
      char escaped[4];
      std::snprintf(escaped, sizeof(escaped), "%%%02X", c);
      file += escaped;
    } else {
      file += static_cast<char>(c);
    }
  }
  return file + ".npy";
}

bool parseNpy(const char *bytes, size_t size, const std::string &path,
              NpyArray &array, std::string &error) {
  NpyLayout layout;
  if (!parseLayout(bytes, size, size, path, layout, error))
    return false;
  array.kind = std::move(layout.kind);
  array.shape = std::move(layout.shape);
  array.data.assign(bytes + layout.dataOffset,
                    bytes + layout.dataOffset + layout.dataBytes);
  return true;
}

namespace {

/// Reads `bytes` bytes at `offset` of `fd`; false with errno set, or
/// errno 0 at the end of the file.
bool readFully(int fd, char *data, uint64_t bytes, uint64_t offset) {
  while (bytes > 0) {
    ssize_t got = pread(fd, data, bytes < (1u << 30) ? bytes : (1u << 30),
                        static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0) {
      if (got == 0)
        errno = 0;
      return false;
    }
    data += got;
    bytes -= static_cast<uint64_t>(got);
    offset += static_cast<uint64_t>(got);
  }
  return true;
}

/// An open .npy file: its descriptor (closed with it), size and layout.
struct OpenNpy {
  int fd = -1;
  uint64_t fileSize = 0;
  NpyLayout layout;
  ~OpenNpy() {
    if (fd >= 0)
      close(fd);
  }
};

/// Opens `path` and reads its header; false with `error` set.
bool openNpy(const std::string &path, OpenNpy &file, std::string &error) {
  file.fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (file.fd < 0) {
    error = "cannot open '" + path + "': " + std::strerror(errno);
    return false;
  }
  struct stat info;
  if (fstat(file.fd, &info) != 0) {
    error = "cannot read '" + path + "': " + std::strerror(errno);
    return false;
  }
  if (!S_ISREG(info.st_mode)) {
    error = "'" + path +
            "' is not a regular file; give a .npy file saved "
            "with numpy.save";
    return false;
  }
  file.fileSize = static_cast<uint64_t>(info.st_size);
  std::vector<char> prefix(
      std::min<uint64_t>(file.fileSize, 12 + kMaxHeaderBytes));
  if (!readFully(file.fd, prefix.data(), prefix.size(), 0)) {
    error = "cannot read '" + path + "': " +
            (errno ? std::strerror(errno) : "it shrank while being read");
    return false;
  }
  return parseLayout(prefix.data(), prefix.size(), file.fileSize, path,
                     file.layout, error);
}

} // namespace

bool readNpy(const std::string &path, NpyArray &array, std::string &error) {
  OpenNpy file;
  if (!openNpy(path, file, error))
    return false;
  int fd = file.fd;
  NpyLayout &layout = file.layout;
  array.kind = std::move(layout.kind);
  array.shape = std::move(layout.shape);
  array.data.resize(layout.dataBytes);
  if (!readFully(fd, array.data.data(), layout.dataBytes, layout.dataOffset)) {
    error = "cannot read '" + path + "': " +
            (errno ? std::strerror(errno) : "it shrank while being read");
    return false;
  }
  return true;
}

MappedNpy::~MappedNpy() {
  if (base)
    munmap(base, length);
}

bool mapNpy(const std::string &path, MappedNpy &array, std::string &error) {
  OpenNpy file;
  if (!openNpy(path, file, error))
    return false;
  array.kind = std::move(file.layout.kind);
  array.shape = std::move(file.layout.shape);
  array.offset = file.layout.dataOffset;
  array.bytes = static_cast<size_t>(file.layout.dataBytes);
  array.length = array.offset + array.bytes;
  // From the file's start, the header with it: the data's offset is not a
  // page's.
  void *mapped =
      mmap(nullptr, array.length, PROT_READ, MAP_PRIVATE, file.fd, 0);
  if (mapped == MAP_FAILED) {
    error = "cannot map '" + path + "': " + std::strerror(errno);
    array.length = 0;
    return false;
  }
  array.base = static_cast<char *>(mapped);
  return true;
}

std::string npyHeader(const std::string &kind,
                      const std::vector<int64_t> &shape) {
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
  uint16_t length = header.size();
  std::string bytes("\x93NUMPY\x01\x00", 8);
  bytes += static_cast<char>(length & 0xFF);
  bytes += static_cast<char>(length >> 8);
  return bytes + header;
}

} // namespace cleave::rt
