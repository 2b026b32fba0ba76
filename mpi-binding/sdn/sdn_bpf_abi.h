/* What the bpf tagger's programs and user space share (docs/sdn.md "bpf
 * backend"): pinned object names and map value layouts, version 1. Plain
 * C for both clang -target bpf and the host compiler. */
#ifndef MRAIL_SDN_BPF_ABI_H
#define MRAIL_SDN_BPF_ABI_H

#define MRAIL_SDN_BPF_ABI_VERSION 1
#define MRAIL_SDN_BPF_DIR "/sys/fs/bpf/mrail"  /* MRAIL_SDN_BPF_DIR overrides */
/* Pinned under the directory: */
#define MRAIL_SDN_BPF_TAGS "tags"       /* SK_STORAGE: socket -> tag */
#define MRAIL_SDN_BPF_IFMAC "ifmac"     /* HASH: ifindex -> its real MAC */
#define MRAIL_SDN_BPF_STATS "stats"     /* PERCPU_ARRAY of __u64 */
#define MRAIL_SDN_BPF_EGRESS "egress"   /* the programs */
#define MRAIL_SDN_BPF_INGRESS "ingress"
/* tc filter identity on every interface the loader attaches to. */
#define MRAIL_SDN_BPF_TC_HANDLE 0x5d
#define MRAIL_SDN_BPF_TC_PRIO 0x5d

/* Value of the tags map: valid = 0 means "send untagged" (the socket keeps
 * the receiver's real MAC). 8 bytes. */
struct mrail_sdn_bpf_tag {
	unsigned char mac[6];
	unsigned char valid;
	unsigned char version;   /* MRAIL_SDN_BPF_ABI_VERSION */
};

struct mrail_sdn_bpf_mac {
	unsigned char mac[6];
	unsigned char pad[2];
};

/* Indices of the stats map. */
enum {
	MRAIL_SDN_ST_TAGGED_PKTS, MRAIL_SDN_ST_TAGGED_BYTES,
	MRAIL_SDN_ST_PLAIN_PKTS, MRAIL_SDN_ST_PLAIN_BYTES,
	MRAIL_SDN_ST_RESTORED_PKTS, MRAIL_SDN_ST_RESTORED_BYTES,
	MRAIL_SDN_ST_COUNT
};

#endif
