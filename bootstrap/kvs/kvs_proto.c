/* placeholder: being written */
typedef int mrail_placeholder_kvs_proto;
