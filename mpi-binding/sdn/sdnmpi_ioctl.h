/* The UnisonFlow tagging kernel module's ABI, version 1 (docs/sdn.md
 * "unisonflow backend"): the MPI library opens /dev/sdnmpi (a misc
 * character device) at init and, through ioctl, adds each TCP connection it
 * opens to another MPI process to the module's peer table, and removes it
 * before closing it. The module tags the packets of registered connections
 * only; everything else leaves untouched.
 *
 * Plain C, no libmrail headers: a kernel module can include it as is. */
#ifndef MRAIL_SDNMPI_IOCTL_H
#define MRAIL_SDNMPI_IOCTL_H

#ifdef __KERNEL__
#include <linux/ioctl.h>
#include <linux/types.h>
#else
#include <linux/types.h>
#include <sys/ioctl.h>
#endif

#define SDNMPI_DEVICE "/dev/sdnmpi"
#define SDNMPI_ABI_VERSION 1

/* One TCP connection, as the sender of its packets sees it. Addresses and
 * ports in network byte order; an IPv4 address fills the first 4 bytes of
 * its 16 and the rest is zero. 52 bytes, no implicit padding. */
struct sdnmpi_peer {
	__u32 version;          /* SDNMPI_ABI_VERSION */
	__u16 family;           /* AF_INET (2) or AF_INET6 (10) */
	__u16 reserved;         /* 0 */
	__u8 saddr[16];         /* local address */
	__u8 daddr[16];         /* remote address */
	__be16 sport;           /* local port */
	__be16 dport;           /* remote port */
	__u32 src_rank;         /* this process, MPI_COMM_WORLD rank */
	__u32 dst_rank;         /* the peer's MPI_COMM_WORLD rank */
};

#define SDNMPI_IOC_MAGIC 'S'
/* Add a connection to the peer table; -EEXIST if it is there already. */
#define SDNMPI_IOC_ADD_PEER _IOW(SDNMPI_IOC_MAGIC, 1, struct sdnmpi_peer)
/* Remove it (matched by family and 4-tuple); -ENOENT if absent. */
#define SDNMPI_IOC_DEL_PEER _IOW(SDNMPI_IOC_MAGIC, 2, struct sdnmpi_peer)

#endif
