/* pyfreight's declarations of the mach_vm calls CPython's remote debugging makes
 * (Python/remote_debug.h): the SDK's MIG-generated header is not among the pinned zig's
 * macOS headers, but the functions are in libSystem (its libSystem.tbd lists them).
 * Written from the documented interface (mach_vm.defs), not copied. */
#ifndef PYFREIGHT_MACH_VM_H
#define PYFREIGHT_MACH_VM_H
#include <mach/mach_types.h>
#include <mach/message.h>
#include <mach/vm_region.h>

kern_return_t mach_vm_region(vm_map_read_t target_task, mach_vm_address_t *address,
                             mach_vm_size_t *size, vm_region_flavor_t flavor,
                             vm_region_info_t info, mach_msg_type_number_t *info_count,
                             mach_port_t *object_name);
kern_return_t mach_vm_read_overwrite(vm_map_read_t target_task, mach_vm_address_t address,
                                     mach_vm_size_t size, mach_vm_address_t data,
                                     mach_vm_size_t *out_size);
kern_return_t mach_vm_write(vm_map_t target_task, mach_vm_address_t address, vm_offset_t data,
                            mach_msg_type_number_t data_count);
#endif
