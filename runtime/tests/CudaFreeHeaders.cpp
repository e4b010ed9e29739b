//===- CudaFreeHeaders.cpp - Client headers that need no cuda.h -----------===//
//
// Compiled with runtime/include alone: what a client (conv-run) needs for
// telemetry, the diagnosis, bundles and runs must not pull in <cuda.h>, so
// it builds without the CUDA toolkit's include directory.
//
//===----------------------------------------------------------------------===//

#include "convrt/Compatibility.h"
#include "convrt/Diagnosis.h"
#include "convrt/Manifest.h"
#include "convrt/ReferenceConv.h"
#include "convrt/Runner.h"
#include "convrt/Telemetry.h"
#include "convrt/TensorMap.h"

#ifdef CUDA_VERSION
#error "a client header of convrt included cuda.h"
#endif
