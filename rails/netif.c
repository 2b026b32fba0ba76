/* being written (issue 3) */
typedef int mrail_placeholder_netif;
