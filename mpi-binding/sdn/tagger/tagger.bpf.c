/* The bpf tagger's tc programs (docs/sdn.md "bpf backend"); loaded and
 * attached by mrail-sdn-tagger. Plain BPF, no CO-RE: only __sk_buff and
 * helpers, so one object serves every kernel with socket storage (5.2+).
 *
 * egress:  a packet whose socket carries a tag leaves with the tag as its
 *          destination MAC; every other packet leaves untouched.
 * ingress: a frame whose destination MAC has the shape of a tag gets the
 *          interface's real MAC back and is handed up as addressed to this
 *          host (for networks where no switch restores it).
 */
#include <linux/bpf.h>
#include <linux/if_packet.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>

#include "../sdn_bpf_abi.h"

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct mrail_sdn_bpf_tag);
} tags SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, struct mrail_sdn_bpf_mac);
} ifmac SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, MRAIL_SDN_ST_COUNT);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

static __always_inline void count(__u32 i, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &i);
	if (v)
		*v += n;
}

SEC("tc")
int mrail_sdn_egress(struct __sk_buff *skb)
{
	struct bpf_sock *sk = skb->sk;
	struct mrail_sdn_bpf_tag *t = 0;

	if (sk)
		sk = bpf_sk_fullsock(sk);
	if (sk)
		t = bpf_sk_storage_get(&tags, sk, 0, 0);
	if (!t || !t->valid) {
		count(MRAIL_SDN_ST_PLAIN_PKTS, 1);
		count(MRAIL_SDN_ST_PLAIN_BYTES, skb->len);
		return TC_ACT_OK;
	}
	/* Copy first: user space may rewrite the value meanwhile. */
	__u8 mac[6];
	__builtin_memcpy(mac, t->mac, 6);
	bpf_skb_store_bytes(skb, 0, mac, 6, 0);
	count(MRAIL_SDN_ST_TAGGED_PKTS, 1);
	count(MRAIL_SDN_ST_TAGGED_BYTES, skb->len);
	return TC_ACT_OK;
}

SEC("tc")
int mrail_sdn_ingress(struct __sk_buff *skb)
{
	/* Frames to this interface's own address (even one that has a tag's
	 * shape), broadcast and multicast are not ours to touch: only a
	 * frame the stack would drop as meant for another host is. */
	if (skb->pkt_type != PACKET_OTHERHOST)
		return TC_ACT_OK;
	void *data = (void *)(long)skb->data;
	void *end = (void *)(long)skb->data_end;
	__u8 *d = data;

	if (data + 6 > end)
		return TC_ACT_OK;
	/* Version 1, locally administered, unicast (docs/sdn.md). */
	if ((d[0] & 0x03) != 0x02 || (d[0] >> 6) != 1)
		return TC_ACT_OK;
	/* Accepted as ours without writing the real MAC back: the stack past
	 * this point reads pkt_type, not the header, and packet sockets saw
	 * the frame before us; a write would copy the header of every (TCP:
	 * cloned) packet, 3/4 of this program's cost (docs/sdn.md). */
	bpf_skb_change_type(skb, PACKET_HOST);
	count(MRAIL_SDN_ST_RESTORED_PKTS, 1);
	count(MRAIL_SDN_ST_RESTORED_BYTES, skb->len);
	return TC_ACT_OK;
}

char LICENSE[] SEC("license") = "GPL";
