// Stands in for the toolkit's header under the simulator (the toolkit's needs nvcc).
#pragma once
#include "../../cg.h"
