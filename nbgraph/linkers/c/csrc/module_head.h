/* nbgraph C module (ABI ${abi}).  Generated: do not edit. */
#include <stdint.h>
#include <stddef.h>
${math}
#define NBG_ERRLEN ${errlen}
#define NBG_RT_VERSION ${rt_version}
