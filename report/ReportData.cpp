//===- ReportData.cpp - what `cleave report` reads ------------------------===//

#include "report/ReportData.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <cmath>
#include <limits>

namespace cleave::report {

namespace {

llvm::Error fail(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// Reads fields of one JSON object, remembering the first problem.
class Fields {
public:
  Fields(const llvm::json::Object &object, std::string where,
         std::string &error)
      : object(object), where(std::move(where)), error(error) {}

  std::string string(llvm::StringRef key, bool required = false) {
    if (auto value = object.getString(key))
      return value->str();
    problem(key, "a string", required);
    return "";
  }
  int64_t integer(llvm::StringRef key, int64_t fallback = 0,
                  bool required = false) {
    if (auto value = object.getInteger(key))
      return *value;
    problem(key, "an integer", required);
    return fallback;
  }
  double number(llvm::StringRef key, bool required = false) {
    if (auto value = object.getNumber(key))
      return *value;
    problem(key, "a number", required);
    return 0;
  }
  const llvm::json::Array *array(llvm::StringRef key, bool required = false) {
    if (auto *value = object.getArray(key))
      return value;
    problem(key, "an array", required);
    return nullptr;
  }
  const llvm::json::Object *child(llvm::StringRef key, bool required = false) {
    if (auto *value = object.getObject(key))
      return value;
    problem(key, "an object", required);
    return nullptr;
  }

private:
  void problem(llvm::StringRef key, llvm::StringRef kind, bool required) {
    if (!error.empty())
      return;
    if (object.get(key))
      error = where + ": '" + key.str() + "' is not " + kind.str();
    else if (required)
      error = where + ": '" + key.str() + "' is missing";
  }

  const llvm::json::Object &object;
  std::string where;
  std::string &error;
};

llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
readFile(llvm::StringRef path, llvm::StringRef what) {
  auto file = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!file)
    return fail("cannot read the " + what + " '" + path +
                "': " + file.getError().message());
  return std::move(*file);
}

/// "dp=2,tp=2" -> axes (roles and links from `axes` when given).
std::vector<MeshAxis> parseMesh(llvm::StringRef text,
                                const llvm::json::Object *axes) {
  std::vector<MeshAxis> mesh;
  for (llvm::StringRef item : llvm::split(text, ',')) {
    auto [name, size] = item.split('=');
    if (name.trim().empty())
      continue;
    MeshAxis axis;
    axis.name = name.trim().str();
    if (size.trim().getAsInteger(10, axis.size) || axis.size < 1)
      axis.size = 1;
    if (axes)
      if (const llvm::json::Object *info = axes->getObject(axis.name)) {
        axis.role = info->getString("role").value_or("").str();
        axis.link = info->getString("link").value_or("").str();
      }
    mesh.push_back(std::move(axis));
  }
  return mesh;
}

bool parsePlan(const llvm::json::Value &value, const std::string &where,
               Plan &plan, std::string &error) {
  const llvm::json::Object *object = value.getAsObject();
  if (!object) {
    error = where + " is not an object";
    return false;
  }
  Fields f(*object, where, error);
  plan.place = f.integer("rank", 0);
  plan.meshFlag = f.string("mesh_flag", true);
  plan.mesh = parseMesh(plan.meshFlag, f.child("axes"));
  plan.strategy = f.string("strategy");
  plan.pipelineAxis = f.string("pipeline_axis");
  plan.microbatches = f.integer("microbatches", 1);
  plan.reason = f.string("reason");
  if (const llvm::json::Array *flags = f.array("flags"))
    for (const llvm::json::Value &flag : *flags)
      if (auto text = flag.getAsString())
        plan.flags.push_back(text->str());
  if (const llvm::json::Object *p = f.child("predicted")) {
    Fields g(*p, where + ".predicted", error);
    plan.predicted = true;
    plan.stepMs = g.number("step_ms", true);
    plan.computeMs = g.number("compute_ms");
    plan.commMs = g.number("exposed_comm_ms");
    plan.bubbleMs = g.number("bubble_ms");
    plan.peakBytes = g.integer("peak_bytes_per_rank");
    plan.commBytes = g.integer("comm_bytes_per_rank");
  }
  if (const llvm::json::Array *memory = f.array("memory_by_stage"))
    for (auto [i, entry] : llvm::enumerate(*memory)) {
      const llvm::json::Object *m = entry.getAsObject();
      if (!m) {
        error = llvm::formatv("{0}.memory_by_stage[{1}] is not an object",
                              where, i);
        return false;
      }
      Fields g(*m, llvm::formatv("{0}.memory_by_stage[{1}]", where, i), error);
      MemoryParts parts;
      parts.parameters = g.integer("parameters", 0, true);
      parts.gradients = g.integer("gradients", 0, true);
      parts.optimizerState = g.integer("optimizer_state", 0, true);
      parts.activations = g.integer("activations", 0, true);
      parts.workspace = g.integer("workspace", 0, true);
      plan.memoryByStage.push_back(parts);
    }
  if (const llvm::json::Array *schedule = f.array("schedule"))
    for (auto [i, entry] : llvm::enumerate(*schedule)) {
      const llvm::json::Object *s = entry.getAsObject();
      if (!s)
        continue;
      Fields g(*s, llvm::formatv("{0}.schedule[{1}]", where, i), error);
      Slice slice;
      slice.stage = g.integer("stage", 0, true);
      slice.microbatch = g.integer("microbatch", -1);
      slice.kind = g.string("kind", true);
      slice.startMs = g.number("start_ms", true);
      slice.endMs = g.number("end_ms", true);
      plan.schedule.push_back(slice);
    }
  if (const llvm::json::Array *collectives = f.array("collectives"))
    for (auto [i, entry] : llvm::enumerate(*collectives)) {
      const llvm::json::Object *c = entry.getAsObject();
      if (!c)
        continue;
      Fields g(*c, llvm::formatv("{0}.collectives[{1}]", where, i), error);
      CollectiveRow row;
      row.stage = g.integer("stage");
      row.kind = g.string("kind", true);
      row.axes = g.string("axes");
      row.count = g.integer("count");
      row.bytes = g.integer("bytes");
      row.ms = g.number("ms");
      plan.collectives.push_back(row);
    }
  if (const llvm::json::Array *tensors = f.array("tensors"))
    for (auto [i, entry] : llvm::enumerate(*tensors)) {
      const llvm::json::Object *t = entry.getAsObject();
      if (!t)
        continue;
      Fields g(*t, llvm::formatv("{0}.tensors[{1}]", where, i), error);
      HeldTensor tensor;
      tensor.name = g.string("name", true);
      tensor.role = g.string("role");
      tensor.sharding = g.string("sharding");
      tensor.stage = g.integer("stage", -1);
      tensor.bytes = g.integer("bytes");
      if (const llvm::json::Array *shape = g.array("shape"))
        for (const llvm::json::Value &dim : *shape)
          tensor.shape.push_back(dim.getAsInteger().value_or(0));
      plan.tensors.push_back(std::move(tensor));
    }
  return error.empty();
}

/// The model's name without its directories (programs and plans may name
/// it by different paths).
std::string baseName(llvm::StringRef path) {
  return llvm::sys::path::filename(path).str();
}

std::optional<RunIdentity> parseIdentity(const llvm::json::Object *object) {
  if (!object)
    return std::nullopt;
  RunIdentity run;
  run.model = object->getString("model").value_or("").str();
  run.mesh = object->getString("mesh").value_or("").str();
  run.ranks = object->getInteger("ranks").value_or(1);
  return run;
}

} // namespace

int64_t Plan::ranks() const {
  int64_t ranks = 1;
  for (const MeshAxis &axis : mesh)
    ranks *= axis.size;
  return ranks;
}

int64_t Plan::stages() const {
  for (const MeshAxis &axis : mesh)
    if (axis.name == pipelineAxis)
      return axis.size;
  return 1;
}

std::vector<int64_t> Plan::coordsOfRank(int64_t rank) const {
  std::vector<int64_t> coords(mesh.size());
  for (int64_t a = static_cast<int64_t>(mesh.size()) - 1; a >= 0; --a) {
    coords[a] = rank % mesh[a].size;
    rank /= mesh[a].size;
  }
  return coords;
}

int64_t Plan::stageOfRank(int64_t rank) const {
  std::vector<int64_t> coords = coordsOfRank(rank);
  for (size_t a = 0; a < mesh.size(); ++a)
    if (mesh[a].name == pipelineAxis)
      return coords[a];
  return 0;
}

llvm::Expected<PlanFile> parsePlanFile(const llvm::json::Value &root,
                                       llvm::StringRef path) {
  const llvm::json::Object *object = root.getAsObject();
  std::string where = "the plan '" + path.str() + "'";
  if (!object || !object->getArray("plans"))
    return fail(where + " is not the JSON of `cleave plan --json` (it has "
                        "no \"plans\" list)");
  std::string error;
  PlanFile file;
  file.path = path.str();
  Fields f(*object, where, error);
  file.model = f.string("model", true);
  file.globalBatch = f.integer("global_batch");
  if (const llvm::json::Object *cluster = f.child("cluster")) {
    Fields g(*cluster, where + ": cluster", error);
    file.cluster = g.string("name");
    file.devices = g.integer("devices");
    file.deviceMemoryBytes = g.integer("memory_bytes");
    file.target = g.string("target");
  }
  for (auto [key, list] :
       {std::pair{"plans", &file.plans}, std::pair{"rejected", &file.rejected}})
    if (const llvm::json::Array *plans = f.array(key))
      for (auto [i, value] : llvm::enumerate(*plans)) {
        Plan plan;
        if (!parsePlan(value, llvm::formatv("{0}: {1}[{2}]", where, key, i),
                       plan, error))
          break;
        list->push_back(std::move(plan));
      }
  if (!error.empty())
    return fail(error);
  return file;
}

llvm::Expected<PlanFile> readPlanFile(llvm::StringRef path) {
  auto file = readFile(path, "plan");
  if (!file)
    return file.takeError();
  llvm::Expected<llvm::json::Value> root =
      llvm::json::parse((*file)->getBuffer());
  if (!root)
    return fail("the plan '" + path + "' is not JSON (" +
                llvm::toString(root.takeError()) +
                "); give the file `cleave plan --json` wrote");
  return parsePlanFile(*root, path);
}

llvm::Expected<RunLog> readRunLog(llvm::StringRef path) {
  auto file = readFile(path, "log");
  if (!file)
    return file.takeError();
  RunLog log;
  log.path = path.str();
  int64_t number = 0;
  for (llvm::StringRef line : llvm::split((*file)->getBuffer(), '\n')) {
    ++number;
    if (line.trim().empty())
      continue;
    std::string where = llvm::formatv("the log '{0}', line {1}", path, number);
    llvm::Expected<llvm::json::Value> value = llvm::json::parse(line);
    if (!value)
      return fail(where + " is not JSON (" + llvm::toString(value.takeError()) +
                  "); give the file a training program's --log wrote");
    const llvm::json::Object *record = value->getAsObject();
    std::optional<int64_t> step =
        record ? record->getInteger("step") : std::nullopt;
    const llvm::json::Value *loss = record ? record->get("loss") : nullptr;
    if (!step || !loss || (!loss->getAsNumber() && !loss->getAsNull()))
      return fail(where + " is not a {\"step\":k,\"loss\":x} record of a "
                          "training program's --log");
    log.losses.push_back(
        {*step, loss->getAsNumber().value_or(
                    std::numeric_limits<double>::quiet_NaN())});
    if (auto run = parseIdentity(record->getObject("run")))
      log.run = run;
    if (const llvm::json::Array *memory = record->getArray("memory")) {
      log.memory.clear();
      for (const llvm::json::Value &entry : *memory) {
        const llvm::json::Object *m = entry.getAsObject();
        if (!m)
          return fail(where + ": \"memory\" holds a non-object");
        MeasuredMemory measured;
        measured.parameters = m->getInteger("parameters").value_or(0);
        measured.optimizerState = m->getInteger("optimizer_state").value_or(0);
        measured.scratch = m->getInteger("scratch").value_or(0);
        log.memory.push_back(measured);
      }
    }
  }
  if (log.losses.empty())
    return fail("the log '" + path +
                "' is empty: it holds no training step (did the run "
                "start? a program writes one line per step)");
  return log;
}

llvm::Expected<Trace> readTrace(llvm::StringRef path) {
  auto file = readFile(path, "trace");
  if (!file)
    return file.takeError();
  std::string where = "the trace '" + path.str() + "'";
  llvm::Expected<llvm::json::Value> root =
      llvm::json::parse((*file)->getBuffer());
  if (!root)
    return fail(where + " is not JSON (" + llvm::toString(root.takeError()) +
                "); give the file a training program's --trace wrote");
  const llvm::json::Object *object = root->getAsObject();
  const llvm::json::Array *events =
      object ? object->getArray("traceEvents") : root->getAsArray();
  if (!events)
    return fail(where + " is not a Chrome trace (no \"traceEvents\" list)");
  Trace trace;
  trace.path = path.str();
  if (object)
    trace.run = parseIdentity(object->getObject("otherData"));
  for (const llvm::json::Value &value : *events) {
    const llvm::json::Object *e = value.getAsObject();
    if (!e || e->getString("ph").value_or("") != "X")
      continue;
    TraceEvent event;
    event.rank = e->getInteger("pid").value_or(0);
    event.tid = e->getInteger("tid").value_or(0);
    event.name = e->getString("name").value_or("").str();
    event.category = e->getString("cat").value_or("").str();
    event.startUs = e->getNumber("ts").value_or(0);
    event.durationUs = e->getNumber("dur").value_or(0);
    if (const llvm::json::Object *args = e->getObject("args")) {
      event.stage = args->getInteger("stage").value_or(-1);
      event.microbatch = args->getInteger("microbatch").value_or(-1);
      event.bytes = args->getInteger("bytes").value_or(-1);
      event.peer = args->getInteger("peer").value_or(-1);
      event.step = args->getInteger("step").value_or(-1);
      event.op = args->getString("op").value_or("").str();
    }
    trace.events.push_back(std::move(event));
  }
  if (trace.events.empty())
    return fail(where + " holds no complete events (\"ph\":\"X\"): was it "
                        "written by a run that traced no step?");
  return trace;
}

llvm::Expected<const Plan *>
chooseRunPlan(const PlanFile &plans, const RunIdentity &run,
              const std::vector<MeasuredMemory> &memory, llvm::StringRef what) {
  auto meshOf = [](llvm::StringRef mesh) {
    return mesh.empty() ? std::string("(one rank)") : mesh.str();
  };
  if (!run.model.empty() && baseName(run.model) != baseName(plans.model))
    return fail(llvm::formatv(
        "{0} is from a different program than the plan: it ran the model "
        "'{1}', the plan '{2}' is for '{3}'; give the plan of the model "
        "that ran",
        what, run.model, plans.path, plans.model));
  std::vector<const Plan *> sameMesh;
  std::vector<std::string> meshes;
  for (const Plan &plan : plans.plans) {
    if (plan.meshFlag == run.mesh)
      sameMesh.push_back(&plan);
    if (!llvm::is_contained(meshes, meshOf(plan.meshFlag)))
      meshes.push_back(meshOf(plan.meshFlag));
  }
  if (sameMesh.empty())
    return fail(llvm::formatv(
        "{0} is from a different program than the plan: it ran on the mesh "
        "{1} ({2} ranks), and no plan of '{3}' has that mesh (its plans: "
        "{4}); give the plan the program was compiled from",
        what, meshOf(run.mesh), run.ranks, plans.path,
        llvm::join(meshes, ", ")));
  // Among plans with that mesh, the one whose parameters and state are
  // what the program held.
  if (!memory.empty())
    for (const Plan *plan : sameMesh) {
      if (!plan->hasDetails())
        continue;
      bool equal = static_cast<int64_t>(memory.size()) == plan->ranks();
      for (size_t r = 0; equal && r < memory.size(); ++r) {
        const MemoryParts &m = plan->memoryByStage[std::min<size_t>(
            plan->stageOfRank(r), plan->memoryByStage.size() - 1)];
        equal = m.parameters == memory[r].parameters &&
                m.optimizerState == memory[r].optimizerState;
      }
      if (equal)
        return plan;
    }
  return sameMesh.front();
}

} // namespace cleave::report
