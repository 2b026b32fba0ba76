#include "mrail.h"

MRAIL_API const char *mrail_strerror(int err)
{
	switch (err) {
	case MRAIL_OK: return "success";
	case MRAIL_ERR_INVALID: return "invalid argument";
	case MRAIL_ERR_NOMEM: return "out of memory";
	case MRAIL_ERR_TRUNCATE: return "message truncated: receive buffer too small";
	case MRAIL_ERR_PEER: return "peer unreachable or died";
	case MRAIL_ERR_CANCELED: return "request canceled";
	case MRAIL_ERR_CONFIG: return "invalid configuration value";
	case MRAIL_ERR_BOOTSTRAP: return "bootstrap (address exchange) failed";
	case MRAIL_ERR_NOT_FOUND: return "not found";
	case MRAIL_ERR_AGAIN: return "not complete yet";
	case MRAIL_ERR_BUSY: return "request already matched";
	case MRAIL_ERR_TIMEOUT: return "timed out";
	case MRAIL_ERR_IO: return "system call failed";
	case MRAIL_ERR_PEER_CLOSED: return "peer closed its engine";
	case MRAIL_ERR_AUTH: return "authentication failed (job key)";
	case MRAIL_ERR_PROTO: return "protocol error (malformed data)";
	default: return "unknown error";
	}
}
