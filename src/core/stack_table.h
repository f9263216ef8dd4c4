/* stack_table.h: the sampled Python stacks of a recording, interned as a
 * tree: a node is (parent node, frame, line), 0 the root, so that a stack is
 * the id of its innermost frame's node and stacks that share their outer
 * frames share their nodes (a flame graph is this tree, counted). Found by
 * hash. The sink's: not thread-safe, its owner holds the lock. */
#ifndef TP_CORE_STACK_TABLE_H
#define TP_CORE_STACK_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TP_STACK_NODES_MAX (1u << 22) /* beyond, new stacks are lost (counted) */

typedef struct tp_stack_node_key {
    uint32_t parent, frame;
    int32_t line;
} tp_stack_node_key;

typedef struct tp_stack_table {
    tp_stack_node_key *nodes; /* nodes[id - 1] */
    size_t len, cap;
    uint32_t *slots; /* open addressing over ids, at most half full */
    uint32_t size;
} tp_stack_table;

/* The node (parent, frame, line), made if new (*made set); 0 when memory ran
 * out or the table is full. */
uint32_t tp_stack_table_node(tp_stack_table *t, uint32_t parent, uint32_t frame, int32_t line,
                             bool *made);

void tp_stack_table_free(tp_stack_table *t);

#endif
