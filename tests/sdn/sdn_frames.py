#!/usr/bin/env python3
"""Raw Ethernet frames for the SDN end-to-end test (AF_PACKET, root).
  send IFACE DST_MAC COUNT     COUNT frames of 1000 bytes, ethertype 0x88b5
  recv IFACE COUNT SECONDS     count 0x88b5 frames addressed to IFACE's own
                               MAC (the switch restored it); prints the count
"""
import socket
import sys
import time

ETH_P = 0x88B5  # IEEE local experimental: never MPI, never IP


def mac_of(iface):
    with open("/sys/class/net/%s/address" % iface) as f:
        return bytes.fromhex(f.read().strip().replace(":", ""))


def main():
    cmd, iface = sys.argv[1], sys.argv[2]
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P))
    s.bind((iface, 0))
    me = mac_of(iface)
    if cmd == "send":
        dst = bytes.fromhex(sys.argv[3].replace(":", ""))
        frame = dst + me + ETH_P.to_bytes(2, "big") + bytes(986)
        for i in range(int(sys.argv[4])):
            s.send(frame)
            if i % 8 == 7:  # paced: the userspace switch drops bursts
                time.sleep(0.002)
        return 0
    want, deadline = int(sys.argv[3]), time.monotonic() + float(sys.argv[4])
    got = 0
    s.settimeout(0.2)
    while got < want and time.monotonic() < deadline:
        try:
            f = s.recv(2048)
        except socket.timeout:
            continue
        if f[:6] == me:
            got += 1
    print(got)
    return 0


sys.exit(main())
