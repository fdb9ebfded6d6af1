/* vt_scopes.h - a module's compile units' scope trees, each walked once
 * (vt_scopes.c); apart from vt_analyze_int.h because it needs libdw's
 * Dwarf_Die.  Not a public interface. */
#ifndef VT_SCOPES_H
#define VT_SCOPES_H

#include <elfutils/libdw.h>
#include <stdint.h>

/* What dwarf_getscopes(cu, pc) gives, as the physical path innermost first
 * into out (at most max): n > 0; 0 none; -1 an error of libdw's; -2 the
 * index cannot tell (call dwarf_getscopes).  An index lives no longer than
 * the Dwarf its DIEs come from; one thread at a time. */
typedef struct vt_scopes vt_scopes;
vt_scopes *vt_scopes_new(void);
void vt_scopes_free(vt_scopes *s);
int vt_scopes_get(vt_scopes *s, Dwarf_Die *cu, uint64_t pc, Dwarf_Die *out, int max);

#endif
