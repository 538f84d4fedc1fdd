#include "config.h"
#include "dpc_status.h"
#include "dpcoll.h"

const char *dpc_status_str(dpc_status_t st)
{
    switch (st) {
    case DPC_OK: return "success";
    case DPC_INPROGRESS: return "in progress";
    case DPC_ERR_NOMEM: return "out of memory";
    case DPC_ERR_ARG: return "invalid argument";
    case DPC_ERR_UNSUPPORTED: return "not supported";
    case DPC_ERR_TRANSPORT: return "transport error";
    case DPC_ERR_PEER_LOST: return "peer lost";
    case DPC_ERR_TIMEOUT: return "timed out";
    case DPC_ERR_CANCELED: return "cancelled";
    case DPC_ERR_TRUNCATE: return "message truncated";
    case DPC_ERR_STATE: return "invalid state";
    }
    return "unknown status";
}

const char *dpcoll_version_string(void)
{
    return PACKAGE_VERSION;
}
