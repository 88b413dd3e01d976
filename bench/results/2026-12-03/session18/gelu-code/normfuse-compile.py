# AOT ID: ['1_inference']
from ctypes import c_void_p, c_long, c_int
import torch
import math
import random
import os
import tempfile
from math import inf, nan
from cmath import nanj
from torch._inductor.hooks import run_intermediate_hooks
from torch._inductor.utils import maybe_profile
from torch._inductor.codegen.memory_planning import _align as align
from torch import device, empty_strided
from torch._inductor.async_compile import AsyncCompile
from torch._inductor.select_algorithm import extern_kernels
import triton
import triton.language as tl
from torch._inductor.runtime.triton_heuristics import start_graph, end_graph
from torch._C import _cuda_getCurrentRawStream as get_raw_stream

aten = torch.ops.aten
inductor_ops = torch.ops.inductor
_quantized = torch.ops._quantized
assert_size_stride = torch._C._dynamo.guards.assert_size_stride
assert_alignment = torch._C._dynamo.guards.assert_alignment
empty_strided_cpu = torch._C._dynamo.guards._empty_strided_cpu
empty_strided_cpu_pinned = torch._C._dynamo.guards._empty_strided_cpu_pinned
empty_strided_cuda = torch._C._dynamo.guards._empty_strided_cuda
empty_strided_xpu = torch._C._dynamo.guards._empty_strided_xpu
empty_strided_mtia = torch._C._dynamo.guards._empty_strided_mtia
reinterpret_tensor = torch._C._dynamo.guards._reinterpret_tensor
alloc_from_pool = torch.ops.inductor._alloc_from_pool
async_compile = AsyncCompile()
empty_strided_p2p = torch._C._distributed_c10d._SymmetricMemory.empty_strided_p2p


# kernel path: /tmp/torchinductor_root/ca/ccazah5f7bzkno3lpb753zwfbyevh76hva7gk4njfph6kcd5yl34.py
# Topologically Sorted Source Nodes: [inputs_embeds, arange, position_ids, position_ids_1, position_embeds, hidden_states, prenorm_linear_default], Original ATen: [aten.embedding, aten.arange, aten.add, aten.unsqueeze, normfuse.prenorm_linear]
# Source node to ATen node mapping:
#   arange => iota
#   hidden_states => add_1
#   inputs_embeds => embedding
#   position_embeds => embedding_1
#   position_ids => add
#   position_ids_1 => unsqueeze
#   prenorm_linear_default => prenorm_linear
# Graph fragment:
#   %arg0_1 : Tensor "i64[8, 1024][1024, 1]cuda:0" = PlaceHolder[target=arg0_1]
#   %arg1_1 : Tensor "bf16[50257, 1280][1280, 1]cuda:0" = PlaceHolder[target=arg1_1]
#   %arg2_1 : Tensor "bf16[1024, 1280][1280, 1]cuda:0" = PlaceHolder[target=arg2_1]
#   %embedding : Tensor "bf16[8, 1024, 1280][1310720, 1280, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.embedding.default](args = (%arg1_1, %arg0_1), kwargs = {})
#   %iota : Tensor "i64[1024][1]cuda:0"[num_users=1] = call_function[target=torch.ops.prims.iota.default](args = (1024,), kwargs = {start: 0, step: 1, dtype: torch.int64, device: cuda:0, requires_grad: False})
#   %add : Tensor "i64[1024][1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%iota, 0), kwargs = {})
#   %unsqueeze : Tensor "i64[1, 1024][1024, 1]cuda:0"[num_users=3] = call_function[target=torch.ops.aten.unsqueeze.default](args = (%add, 0), kwargs = {})
#   %embedding_1 : Tensor "bf16[1, 1024, 1280][1310720, 1280, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.embedding.default](args = (%arg2_1, %unsqueeze), kwargs = {})
#   %add_1 : Tensor "bf16[8, 1024, 1280][1310720, 1280, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.add.Tensor](args = (%embedding, %embedding_1), kwargs = {})
#   %prenorm_linear : Tensor "bf16[8, 1024, 3840][3932160, 3840, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.normfuse.prenorm_linear.default](args = (%add_1, %arg3_1, %arg4_1, [%arg5_1], [%arg6_1], 1e-05, 0.0, True, True, True), kwargs = {})
#   return %buf0
triton_poi_fused_add_arange_embedding_prenorm_linear_unsqueeze_0 = async_compile.triton('triton_poi_fused_add_arange_embedding_prenorm_linear_unsqueeze_0', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_gpu()

@triton_heuristics.pointwise(
    size_hints={'x': 16777216}, 
    filename=__file__,
    triton_meta={'signature': {'in_ptr0': '*i64', 'in_ptr1': '*bf16', 'in_ptr2': '*bf16', 'out_ptr0': '*bf16', 'xnumel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]], (3,): [['tt.divisibility', 16]], (4,): [['tt.divisibility', 16]]}]},
    inductor_meta={'grid_type': 'Grid1D', 'autotune_hints': set(), 'kernel_name': 'triton_poi_fused_add_arange_embedding_prenorm_linear_unsqueeze_0', 'mutated_arg_names': [], 'optimize_mem': True, 'no_x_dim': False, 'atomic_add_found': False, 'num_load': 2, 'num_store': 1, 'num_reduction': 0, 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': False, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'tiling_scores': {'x': 44564480}},
    min_elem_per_thread=0
)
@triton.jit
def triton_poi_fused_add_arange_embedding_prenorm_linear_unsqueeze_0(in_ptr0, in_ptr1, in_ptr2, out_ptr0, xnumel, XBLOCK : tl.constexpr):
    xnumel = 10485760
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = tl.full([XBLOCK], True, tl.int1)[:]
    x3 = xindex // 1280
    x0 = (xindex % 1280)
    x4 = (xindex % 1310720)
    x5 = xindex
    tmp0 = tl.load(in_ptr0 + (x3), None, eviction_policy='evict_last')
    tmp7 = tl.load(in_ptr2 + (x4), None, eviction_policy='evict_last').to(tl.float32)
    tmp1 = tl.full([XBLOCK], 50257, tl.int32)
    tmp2 = tmp0 + tmp1
    tmp3 = tmp0 < 0
    tmp4 = tl.where(tmp3, tmp2, tmp0)
    tl.device_assert((0 <= tmp4) & (tmp4 < 50257), "index out of bounds: 0 <= tmp4 < 50257")
    tmp6 = tl.load(in_ptr1 + (x0 + 1280*tmp4), None).to(tl.float32)
    tmp8 = tmp6 + tmp7
    tl.store(out_ptr0 + (x5), tmp8, None)
''', device_str='cuda')


# kernel path: /tmp/torchinductor_root/la/clarrhrfubssmd5ux6z32tzdmdah2ckvryi3ujq575cqolga45dj.py
# Topologically Sorted Source Nodes: [arange, position_ids, position_ids_1, position_ids_2, getitem, first_dummy_value, position_diff, ne, packed_sequence_mask], Original ATen: [aten.arange, aten.add, aten.unsqueeze, aten.expand, aten.slice, aten.sub, aten.cat, aten.ne, aten.cumsum]
# Source node to ATen node mapping:
#   arange => iota
#   first_dummy_value => sub
#   getitem => slice_1
#   ne => ne
#   packed_sequence_mask => cumsum
#   position_diff => cat, slice_2, slice_3, sub_1
#   position_ids => add
#   position_ids_1 => unsqueeze
#   position_ids_2 => expand
# Graph fragment:
#   %iota : Tensor "i64[1024][1]cuda:0"[num_users=1] = call_function[target=torch.ops.prims.iota.default](args = (1024,), kwargs = {start: 0, step: 1, dtype: torch.int64, device: cuda:0, requires_grad: False})
#   %add : Tensor "i64[1024][1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%iota, 0), kwargs = {})
#   %unsqueeze : Tensor "i64[1, 1024][1024, 1]cuda:0"[num_users=3] = call_function[target=torch.ops.aten.unsqueeze.default](args = (%add, 0), kwargs = {})
#   %expand : Tensor "i64[8, 1024][0, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.expand.default](args = (%unsqueeze, [8, -1]), kwargs = {})
#   %slice_1 : Tensor "i64[8, 1][0, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.slice.Tensor](args = (%expand, 1, 0, 1), kwargs = {})
#   %sub : Tensor "i64[8, 1][1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.sub.Tensor](args = (%slice_1, 1), kwargs = {})
#   %cat : Tensor "i64[8, 1025][1025, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.cat.default](args = ([%sub, %expand], -1), kwargs = {})
#   %slice_3 : Tensor "i64[8, 1024][1025, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.slice.Tensor](args = (%cat, -1, 1, 1025), kwargs = {})
#   %slice_2 : Tensor "i64[8, 1024][1025, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.slice.Tensor](args = (%cat, -1, 0, 1024), kwargs = {})
#   %sub_1 : Tensor "i64[8, 1024][1024, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.sub.Tensor](args = (%slice_3, %slice_2), kwargs = {})
#   %ne : Tensor "b8[8, 1024][1024, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.ne.Scalar](args = (%sub_1, 1), kwargs = {})
#   %cumsum : Tensor "i64[8, 1024][1024, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.cumsum.default](args = (%ne, -1), kwargs = {})
#   return %cumsum
triton_per_fused_add_arange_cat_cumsum_expand_ne_slice_sub_unsqueeze_1 = async_compile.triton('triton_per_fused_add_arange_cat_cumsum_expand_ne_slice_sub_unsqueeze_1', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_gpu()

@triton.jit
def _triton_helper_fn_add0(arg0_0, arg1_0):
    tmp0 = arg0_0 + arg1_0
    return tmp0

@triton_heuristics.persistent_reduction(
    size_hints={'x': 8, 'r0_': 1024},
    reduction_hint=ReductionHint.INNER,
    filename=__file__,
    triton_meta={'signature': {'out_ptr0': '*i64', 'xnumel': 'i32', 'r0_numel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]]}]},
    inductor_meta={'grid_type': 'Grid1D', 'autotune_hints': set(), 'kernel_name': 'triton_per_fused_add_arange_cat_cumsum_expand_ne_slice_sub_unsqueeze_1', 'mutated_arg_names': [], 'optimize_mem': True, 'no_x_dim': None, 'atomic_add_found': False, 'num_load': 0, 'num_store': 1, 'num_reduction': 0, 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': False, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'tiling_scores': {'x': 0, 'r0_': 131072}}
)
@triton.jit
def triton_per_fused_add_arange_cat_cumsum_expand_ne_slice_sub_unsqueeze_1(out_ptr0, xnumel, r0_numel, XBLOCK : tl.constexpr):
    xnumel = 8
    r0_numel = 1024
    R0_BLOCK: tl.constexpr = 1024
    rnumel = r0_numel
    RBLOCK: tl.constexpr = R0_BLOCK
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    r0_index = tl.arange(0, R0_BLOCK)[None, :]
    r0_offset = 0
    r0_mask = tl.full([R0_BLOCK], True, tl.int1)[None, :]
    roffset = r0_offset
    rindex = r0_index
    r0_1 = r0_index
    x0 = xindex
    tmp0 = 1 + r0_1
    tmp1 = tl.full([1, 1], 0, tl.int64)
    tmp2 = tmp0 >= tmp1
    tmp3 = tl.full([1, 1], 1, tl.int64)
    tmp4 = tmp0 < tmp3
    tmp5 = tl.broadcast_to((-1) + (1 + r0_1), [XBLOCK, R0_BLOCK])
    tmp6 = tl.full(tmp5.shape, 0.0, tmp5.dtype)
    tmp7 = tl.where(tmp4, tmp5, tmp6)
    tmp8 = tmp0 >= tmp3
    tmp9 = tl.full([1, 1], 1025, tl.int64)
    tmp10 = tmp0 < tmp9
    tmp11 = tl.broadcast_to(r0_1, [XBLOCK, R0_BLOCK])
    tmp12 = tl.full(tmp11.shape, 0.0, tmp11.dtype)
    tmp13 = tl.where(tmp8, tmp11, tmp12)
    tmp14 = tl.where(tmp4, tmp7, tmp13)
    tmp15 = r0_1
    tmp16 = tmp15 >= tmp1
    tmp17 = tmp15 < tmp3
    tmp18 = tl.broadcast_to((-1) + (r0_1), [XBLOCK, R0_BLOCK])
    tmp19 = tl.full(tmp18.shape, 0.0, tmp18.dtype)
    tmp20 = tl.where(tmp17, tmp18, tmp19)
    tmp21 = tmp15 >= tmp3
    tmp22 = tmp15 < tmp9
    tmp23 = tl.broadcast_to((-1) + r0_1, [XBLOCK, R0_BLOCK])
    tmp24 = tl.full(tmp23.shape, 0.0, tmp23.dtype)
    tmp25 = tl.where(tmp21, tmp23, tmp24)
    tmp26 = tl.where(tmp17, tmp20, tmp25)
    tmp27 = tmp14 - tmp26
    tmp28 = tmp27 != tmp3
    tmp29 = tmp28.to(tl.int64)
    tmp30 = tmp29.to(tl.int64)
    tmp31 = tl.broadcast_to(tmp30, [XBLOCK, R0_BLOCK])
    tmp32, = tl.associative_scan((tmp31,), 1, _triton_helper_fn_add0)
    tl.store(out_ptr0 + (r0_1 + 1024*x0), tmp32, xmask)
''', device_str='cuda')


# kernel path: /tmp/torchinductor_root/mk/cmkoqxwlwtpgssmert5xyaesynmkkjxfmlrbpwjpuufwi676fvap.py
# Topologically Sorted Source Nodes: [arange, position_ids, position_ids_1, split, view_3, query_states_1, view_1, key_states_1, view_2, value_states_1, result, expand_1, batch_arange, batch_indices, arange_4, kv_arange, kv_indices, getitem_6, arange_3, q_arange, q_indices, getitem_5, le, result_1, getitem_7, getitem_8, eq, result_2, attention_mask, attn_output, split_1, view_10, query_states_3, view_8, key_states_3, view_9, value_states_3, attn_output_5, split_2, view_17, query_states_5, view_15, key_states_5, view_16, value_states_5, attn_output_10, split_3, view_24, query_states_7, view_22, key_states_7, view_23, value_states_7, attn_output_15], Original ATen: [aten.arange, aten.add, aten.unsqueeze, aten.split, aten.view, aten.transpose, aten.new_ones, aten.expand, aten.index, aten.le, aten.bitwise_and, aten.eq, aten.scalar_tensor, aten.where, aten._scaled_dot_product_cudnn_attention]
# Source node to ATen node mapping:
#   arange => iota
#   arange_3 => iota_3
#   arange_4 => iota_4
#   attention_mask => expand_2
#   attn_output => _scaled_dot_product_cudnn_attention, full_default_1, full_default_2, where
#   attn_output_10 => _scaled_dot_product_cudnn_attention_2, full_default_5, full_default_6, where_2
#   attn_output_15 => _scaled_dot_product_cudnn_attention_3, full_default_7, full_default_8, where_3
#   attn_output_5 => _scaled_dot_product_cudnn_attention_1, full_default_3, full_default_4, where_1
#   batch_arange => iota_1
#   batch_indices => unsqueeze_1, unsqueeze_2, unsqueeze_3
#   eq => eq
#   expand_1 => expand_1
#   getitem_5 => index
#   getitem_6 => index_1
#   getitem_7 => index_2
#   getitem_8 => index_3
#   key_states_1 => permute
#   key_states_3 => permute_4
#   key_states_5 => permute_8
#   key_states_7 => permute_12
#   kv_arange => add_3
#   kv_indices => unsqueeze_7, unsqueeze_8, unsqueeze_9
#   le => le
#   position_ids => add
#   position_ids_1 => unsqueeze
#   q_arange => add_2
#   q_indices => unsqueeze_4, unsqueeze_5, unsqueeze_6
#   query_states_1 => permute_2
#   query_states_3 => permute_6
#   query_states_5 => permute_10
#   query_states_7 => permute_14
#   result => full_default
#   result_1 => bitwise_and
#   result_2 => bitwise_and_1
#   split => split
#   split_1 => split_1
#   split_2 => split_2
#   split_3 => split_3
#   value_states_1 => permute_1
#   value_states_3 => permute_5
#   value_states_5 => permute_9
#   value_states_7 => permute_13
#   view_1 => view_1
#   view_10 => view_12
#   view_15 => view_19
#   view_16 => view_20
#   view_17 => view_21
#   view_2 => view_2
#   view_22 => view_28
#   view_23 => view_29
#   view_24 => view_30
#   view_3 => view_3
#   view_8 => view_10
#   view_9 => view_11
# Graph fragment:
#   %cumsum : Tensor "i64[8, 1024][1024, 1]cuda:0" = PlaceHolder[target=cumsum]
#   %iota : Tensor "i64[1024][1]cuda:0"[num_users=1] = call_function[target=torch.ops.prims.iota.default](args = (1024,), kwargs = {start: 0, step: 1, dtype: torch.int64, device: cuda:0, requires_grad: False})
#   %add : Tensor "i64[1024][1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%iota, 0), kwargs = {})
#   %unsqueeze : Tensor "i64[1, 1024][1024, 1]cuda:0"[num_users=3] = call_function[target=torch.ops.aten.unsqueeze.default](args = (%add, 0), kwargs = {})
#   %split : [num_users=3] = call_function[target=torch.ops.aten.split.Tensor](args = (%prenorm_linear, 1280, 2), kwargs = {})
#   %view_3 : Tensor "bf16[8, 1024, 20, 64][3932160, 3840, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%getitem, [8, 1024, -1, 64]), kwargs = {})
#   %permute_2 : Tensor "bf16[8, 20, 1024, 64][3932160, 64, 3840, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.permute.default](args = (%view_3, [0, 2, 1, 3]), kwargs = {})
#   %view_1 : Tensor "bf16[8, 1024, 20, 64][3932160, 3840, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%getitem_1, [8, 1024, -1, 64]), kwargs = {})
#   %permute : Tensor "bf16[8, 20, 1024, 64][3932160, 64, 3840, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.permute.default](args = (%view_1, [0, 2, 1, 3]), kwargs = {})
#   %view_2 : Tensor "bf16[8, 1024, 20, 64][3932160, 3840, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%getitem_2, [8, 1024, -1, 64]), kwargs = {})
#   %permute_1 : Tensor "bf16[8, 20, 1024, 64][3932160, 64, 3840, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.permute.default](args = (%view_2, [0, 2, 1, 3]), kwargs = {})
#   %full_default : Tensor "b8[][]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.full.default](args = ([], True), kwargs = {dtype: torch.bool, layout: torch.strided, device: cuda:0, pin_memory: False})
#   %expand_1 : Tensor "i64[8, 1024][0, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.expand.default](args = (%unsqueeze, [8, -1]), kwargs = {})
#   %iota_1 : Tensor "i64[8][1]cuda:0"[num_users=1] = call_function[target=torch.ops.prims.iota.default](args = (8,), kwargs = {start: 0, step: 1, dtype: torch.int64, device: cuda:0, requires_grad: False})
#   %unsqueeze_1 : Tensor "i64[8, 1][1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.unsqueeze.default](args = (%iota_1, 1), kwargs = {})
#   %unsqueeze_2 : Tensor "i64[8, 1, 1][1, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.unsqueeze.default](args = (%unsqueeze_1, 2), kwargs = {})
#   %unsqueeze_3 : Tensor "i64[8, 1, 1, 1][1, 1, 1, 1]cuda:0"[num_users=4] = call_function[target=torch.ops.aten.unsqueeze.default](args = (%unsqueeze_2, 3), kwargs = {})
#   %iota_4 : Tensor "i64[1024][1]cuda:0"[num_users=1] = call_function[target=torch.ops.prims.iota.default](args = (1024,), kwargs = {start: 0, step: 1, dtype: torch.int64, device: cuda:0, requires_grad: False})
#   %add_3 : Tensor "i64[1024][1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%iota_4, 0), kwargs = {})
#   %unsqueeze_7 : Tensor "i64[1, 1024][1024, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.unsqueeze.default](args = (%add_3, 0), kwargs = {})
#   %unsqueeze_8 : Tensor "i64[1, 1, 1024][1024, 1024, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.unsqueeze.default](args = (%unsqueeze_7, 1), kwargs = {})
#   %unsqueeze_9 : Tensor "i64[1, 1, 1, 1024][1024, 1024, 1024, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.unsqueeze.default](args = (%unsqueeze_8, 2), kwargs = {})
#   %index_1 : Tensor "i64[8, 1, 1, 1024][1024, 1024, 1024, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.index.Tensor](args = (%expand_1, [%unsqueeze_3, %unsqueeze_9]), kwargs = {})
#   %iota_3 : Tensor "i64[1024][1]cuda:0"[num_users=1] = call_function[target=torch.ops.prims.iota.default](args = (1024,), kwargs = {start: 0, step: 1, dtype: torch.int64, device: cuda:0, requires_grad: False})
#   %add_2 : Tensor "i64[1024][1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%iota_3, 0), kwargs = {})
#   %unsqueeze_4 : Tensor "i64[1, 1024][1024, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.unsqueeze.default](args = (%add_2, 0), kwargs = {})
#   %unsqueeze_5 : Tensor "i64[1, 1, 1024][1024, 1024, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.unsqueeze.default](args = (%unsqueeze_4, 1), kwargs = {})
#   %unsqueeze_6 : Tensor "i64[1, 1, 1024, 1][1024, 1024, 1, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.unsqueeze.default](args = (%unsqueeze_5, 3), kwargs = {})
#   %index : Tensor "i64[8, 1, 1024, 1][1024, 1024, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.index.Tensor](args = (%expand_1, [%unsqueeze_3, %unsqueeze_6]), kwargs = {})
#   %le : Tensor "b8[8, 1, 1024, 1024][1048576, 1048576, 1024, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.le.Tensor](args = (%index_1, %index), kwargs = {})
#   %bitwise_and : Tensor "b8[8, 1, 1024, 1024][1048576, 1048576, 1024, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.bitwise_and.Tensor](args = (%full_default, %le), kwargs = {})
#   %index_2 : Tensor "i64[8, 1, 1024, 1][1024, 1024, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.index.Tensor](args = (%cumsum, [%unsqueeze_3, %unsqueeze_6]), kwargs = {})
#   %index_3 : Tensor "i64[8, 1, 1, 1024][1024, 1024, 1024, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.index.Tensor](args = (%cumsum, [%unsqueeze_3, %unsqueeze_9]), kwargs = {})
#   %eq : Tensor "b8[8, 1, 1024, 1024][1048576, 1048576, 1024, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.eq.Tensor](args = (%index_2, %index_3), kwargs = {})
#   %bitwise_and_1 : Tensor "b8[8, 1, 1024, 1024][1048576, 1048576, 1024, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.bitwise_and.Tensor](args = (%bitwise_and, %eq), kwargs = {})
#   %expand_2 : Tensor "b8[8, 1, 1024, 1024][1048576, 1048576, 1024, 1]cuda:0"[num_users=4] = call_function[target=torch.ops.aten.expand.default](args = (%bitwise_and_1, [8, -1, 1024, 1024]), kwargs = {})
#   %full_default_2 : Tensor "bf16[][]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.full.default](args = ([], 0.0), kwargs = {dtype: torch.bfloat16, layout: torch.strided, device: cuda:0, pin_memory: False})
#   %full_default_1 : Tensor "bf16[][]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.full.default](args = ([], -65536.0), kwargs = {dtype: torch.bfloat16, layout: torch.strided, device: cuda:0, pin_memory: False})
#   %where : Tensor "bf16[8, 1, 1024, 1024][1048576, 1048576, 1024, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.where.self](args = (%expand_2, %full_default_2, %full_default_1), kwargs = {})
#   %_scaled_dot_product_cudnn_attention : [num_users=1] = call_function[target=torch.ops.aten._scaled_dot_product_cudnn_attention.default](args = (%permute_2, %permute, %permute_1, %where, False), kwargs = {scale: 0.125})
#   %split_1 : [num_users=3] = call_function[target=torch.ops.aten.split.Tensor](args = (%prenorm_linear_2, 1280, 2), kwargs = {})
#   %view_12 : Tensor "bf16[8, 1024, 20, 64][3932160, 3840, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%getitem_12, [8, 1024, -1, 64]), kwargs = {})
#   %permute_6 : Tensor "bf16[8, 20, 1024, 64][3932160, 64, 3840, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.permute.default](args = (%view_12, [0, 2, 1, 3]), kwargs = {})
#   %view_10 : Tensor "bf16[8, 1024, 20, 64][3932160, 3840, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%getitem_13, [8, 1024, -1, 64]), kwargs = {})
#   %permute_4 : Tensor "bf16[8, 20, 1024, 64][3932160, 64, 3840, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.permute.default](args = (%view_10, [0, 2, 1, 3]), kwargs = {})
#   %view_11 : Tensor "bf16[8, 1024, 20, 64][3932160, 3840, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%getitem_14, [8, 1024, -1, 64]), kwargs = {})
#   %permute_5 : Tensor "bf16[8, 20, 1024, 64][3932160, 64, 3840, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.permute.default](args = (%view_11, [0, 2, 1, 3]), kwargs = {})
#   %full_default_4 : Tensor "bf16[][]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.full.default](args = ([], 0.0), kwargs = {dtype: torch.bfloat16, layout: torch.strided, device: cuda:0, pin_memory: False})
#   %full_default_3 : Tensor "bf16[][]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.full.default](args = ([], -65536.0), kwargs = {dtype: torch.bfloat16, layout: torch.strided, device: cuda:0, pin_memory: False})
#   %where_1 : Tensor "bf16[8, 1, 1024, 1024][1048576, 1048576, 1024, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.where.self](args = (%expand_2, %full_default_4, %full_default_3), kwargs = {})
#   %_scaled_dot_product_cudnn_attention_1 : [num_users=1] = call_function[target=torch.ops.aten._scaled_dot_product_cudnn_attention.default](args = (%permute_6, %permute_4, %permute_5, %where_1, False), kwargs = {scale: 0.125})
#   %split_2 : [num_users=3] = call_function[target=torch.ops.aten.split.Tensor](args = (%prenorm_linear_4, 1280, 2), kwargs = {})
#   %view_21 : Tensor "bf16[8, 1024, 20, 64][3932160, 3840, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%getitem_24, [8, 1024, -1, 64]), kwargs = {})
#   %permute_10 : Tensor "bf16[8, 20, 1024, 64][3932160, 64, 3840, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.permute.default](args = (%view_21, [0, 2, 1, 3]), kwargs = {})
#   %view_19 : Tensor "bf16[8, 1024, 20, 64][3932160, 3840, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%getitem_25, [8, 1024, -1, 64]), kwargs = {})
#   %permute_8 : Tensor "bf16[8, 20, 1024, 64][3932160, 64, 3840, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.permute.default](args = (%view_19, [0, 2, 1, 3]), kwargs = {})
#   %view_20 : Tensor "bf16[8, 1024, 20, 64][3932160, 3840, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%getitem_26, [8, 1024, -1, 64]), kwargs = {})
#   %permute_9 : Tensor "bf16[8, 20, 1024, 64][3932160, 64, 3840, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.permute.default](args = (%view_20, [0, 2, 1, 3]), kwargs = {})
#   %full_default_6 : Tensor "bf16[][]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.full.default](args = ([], 0.0), kwargs = {dtype: torch.bfloat16, layout: torch.strided, device: cuda:0, pin_memory: False})
#   %full_default_5 : Tensor "bf16[][]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.full.default](args = ([], -65536.0), kwargs = {dtype: torch.bfloat16, layout: torch.strided, device: cuda:0, pin_memory: False})
#   %where_2 : Tensor "bf16[8, 1, 1024, 1024][1048576, 1048576, 1024, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.where.self](args = (%expand_2, %full_default_6, %full_default_5), kwargs = {})
#   %_scaled_dot_product_cudnn_attention_2 : [num_users=1] = call_function[target=torch.ops.aten._scaled_dot_product_cudnn_attention.default](args = (%permute_10, %permute_8, %permute_9, %where_2, False), kwargs = {scale: 0.125})
#   %split_3 : [num_users=3] = call_function[target=torch.ops.aten.split.Tensor](args = (%prenorm_linear_6, 1280, 2), kwargs = {})
#   %view_30 : Tensor "bf16[8, 1024, 20, 64][3932160, 3840, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%getitem_36, [8, 1024, -1, 64]), kwargs = {})
#   %permute_14 : Tensor "bf16[8, 20, 1024, 64][3932160, 64, 3840, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.permute.default](args = (%view_30, [0, 2, 1, 3]), kwargs = {})
#   %view_28 : Tensor "bf16[8, 1024, 20, 64][3932160, 3840, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%getitem_37, [8, 1024, -1, 64]), kwargs = {})
#   %permute_12 : Tensor "bf16[8, 20, 1024, 64][3932160, 64, 3840, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.permute.default](args = (%view_28, [0, 2, 1, 3]), kwargs = {})
#   %view_29 : Tensor "bf16[8, 1024, 20, 64][3932160, 3840, 64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%getitem_38, [8, 1024, -1, 64]), kwargs = {})
#   %permute_13 : Tensor "bf16[8, 20, 1024, 64][3932160, 64, 3840, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.permute.default](args = (%view_29, [0, 2, 1, 3]), kwargs = {})
#   %full_default_8 : Tensor "bf16[][]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.full.default](args = ([], 0.0), kwargs = {dtype: torch.bfloat16, layout: torch.strided, device: cuda:0, pin_memory: False})
#   %full_default_7 : Tensor "bf16[][]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.full.default](args = ([], -65536.0), kwargs = {dtype: torch.bfloat16, layout: torch.strided, device: cuda:0, pin_memory: False})
#   %where_3 : Tensor "bf16[8, 1, 1024, 1024][1048576, 1048576, 1024, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.where.self](args = (%expand_2, %full_default_8, %full_default_7), kwargs = {})
#   %_scaled_dot_product_cudnn_attention_3 : [num_users=1] = call_function[target=torch.ops.aten._scaled_dot_product_cudnn_attention.default](args = (%permute_14, %permute_12, %permute_13, %where_3, False), kwargs = {scale: 0.125})
#   return %buf4,%buf19,%buf34,%buf49
triton_poi_fused__scaled_dot_product_cudnn_attention_add_arange_bitwise_and_eq_expand_index_le_new_ones_scalar_tensor_split_transpose_unsqueeze_view_where_2 = async_compile.triton('triton_poi_fused__scaled_dot_product_cudnn_attention_add_arange_bitwise_and_eq_expand_index_le_new_ones_scalar_tensor_split_transpose_unsqueeze_view_where_2', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_gpu()

@triton_heuristics.pointwise(
    size_hints={'x': 8388608}, 
    filename=__file__,
    triton_meta={'signature': {'in_ptr0': '*i64', 'out_ptr0': '*bf16', 'out_ptr1': '*bf16', 'out_ptr2': '*bf16', 'out_ptr3': '*bf16', 'xnumel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]], (3,): [['tt.divisibility', 16]], (4,): [['tt.divisibility', 16]], (5,): [['tt.divisibility', 16]]}]},
    inductor_meta={'grid_type': 'Grid1D', 'autotune_hints': set(), 'kernel_name': 'triton_poi_fused__scaled_dot_product_cudnn_attention_add_arange_bitwise_and_eq_expand_index_le_new_ones_scalar_tensor_split_transpose_unsqueeze_view_where_2', 'mutated_arg_names': [], 'optimize_mem': True, 'no_x_dim': False, 'atomic_add_found': False, 'num_load': 2, 'num_store': 4, 'num_reduction': 0, 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': False, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'tiling_scores': {'x': 134283264}},
    min_elem_per_thread=0
)
@triton.jit
def triton_poi_fused__scaled_dot_product_cudnn_attention_add_arange_bitwise_and_eq_expand_index_le_new_ones_scalar_tensor_split_transpose_unsqueeze_view_where_2(in_ptr0, out_ptr0, out_ptr1, out_ptr2, out_ptr3, xnumel, XBLOCK : tl.constexpr):
    xnumel = 8388608
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = tl.full([XBLOCK], True, tl.int1)[:]
    x0 = (xindex % 1024)
    x1 = ((xindex // 1024) % 1024)
    x3 = xindex // 1024
    x2 = xindex // 1048576
    x4 = xindex
    tmp5 = tl.load(in_ptr0 + (x3), None, eviction_policy='evict_last')
    tmp6 = tl.load(in_ptr0 + (x0 + 1024*x2), None, eviction_policy='evict_last')
    tmp0 = x0
    tmp1 = x1
    tmp2 = tmp0 <= tmp1
    tmp3 = tl.full([1], True, tl.int1)
    tmp4 = tmp3 & tmp2
    tmp7 = tmp5 == tmp6
    tmp8 = tmp4 & tmp7
    tmp9 = tl.full([1], 0.0, tl.float32)
    tmp10 = tl.full([1], -65536.0, tl.float32)
    tmp11 = tl.where(tmp8, tmp9, tmp10)
    tl.store(out_ptr0 + (x4), tmp11, None)
    tl.store(out_ptr1 + (x4), tmp11, None)
    tl.store(out_ptr2 + (x4), tmp11, None)
    tl.store(out_ptr3 + (x4), tmp11, None)
''', device_str='cuda')


# kernel path: /tmp/torchinductor_root/4n/c4nsjzcltjqg37inbi3c2xaqt5qtaejhrhikb3ozs4jn27ghvb37.py
# Topologically Sorted Source Nodes: [inputs_embeds, arange, position_ids, position_ids_1, position_embeds, hidden_states, x_1, hidden_states_2], Original ATen: [aten.embedding, aten.arange, aten.add, aten.unsqueeze, aten.view]
# Source node to ATen node mapping:
#   arange => iota
#   hidden_states => add_1
#   hidden_states_2 => add_4
#   inputs_embeds => embedding
#   position_embeds => embedding_1
#   position_ids => add
#   position_ids_1 => unsqueeze
#   x_1 => view_7
# Graph fragment:
#   %addmm : Tensor "bf16[8192, 1280][1280, 1]cuda:0" = PlaceHolder[target=addmm]
#   %arg0_1 : Tensor "i64[8, 1024][1024, 1]cuda:0" = PlaceHolder[target=arg0_1]
#   %arg1_1 : Tensor "bf16[50257, 1280][1280, 1]cuda:0" = PlaceHolder[target=arg1_1]
#   %arg2_1 : Tensor "bf16[1024, 1280][1280, 1]cuda:0" = PlaceHolder[target=arg2_1]
#   %embedding : Tensor "bf16[8, 1024, 1280][1310720, 1280, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.embedding.default](args = (%arg1_1, %arg0_1), kwargs = {})
#   %iota : Tensor "i64[1024][1]cuda:0"[num_users=1] = call_function[target=torch.ops.prims.iota.default](args = (1024,), kwargs = {start: 0, step: 1, dtype: torch.int64, device: cuda:0, requires_grad: False})
#   %add : Tensor "i64[1024][1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%iota, 0), kwargs = {})
#   %unsqueeze : Tensor "i64[1, 1024][1024, 1]cuda:0"[num_users=3] = call_function[target=torch.ops.aten.unsqueeze.default](args = (%add, 0), kwargs = {})
#   %embedding_1 : Tensor "bf16[1, 1024, 1280][1310720, 1280, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.embedding.default](args = (%arg2_1, %unsqueeze), kwargs = {})
#   %add_1 : Tensor "bf16[8, 1024, 1280][1310720, 1280, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.add.Tensor](args = (%embedding, %embedding_1), kwargs = {})
#   %view_7 : Tensor "bf16[8, 1024, 1280][1310720, 1280, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%addmm, [8, 1024, 1280]), kwargs = {})
#   %add_4 : Tensor "bf16[8, 1024, 1280][1310720, 1280, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.add.Tensor](args = (%view_7, %add_1), kwargs = {})
#   return %add_4
triton_poi_fused_add_arange_embedding_unsqueeze_view_3 = async_compile.triton('triton_poi_fused_add_arange_embedding_unsqueeze_view_3', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_gpu()

@triton_heuristics.pointwise(
    size_hints={'x': 16777216}, 
    filename=__file__,
    triton_meta={'signature': {'in_out_ptr0': '*bf16', 'in_ptr0': '*i64', 'in_ptr1': '*bf16', 'in_ptr2': '*bf16', 'xnumel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]], (3,): [['tt.divisibility', 16]], (4,): [['tt.divisibility', 16]]}]},
    inductor_meta={'grid_type': 'Grid1D', 'autotune_hints': set(), 'kernel_name': 'triton_poi_fused_add_arange_embedding_unsqueeze_view_3', 'mutated_arg_names': ['in_out_ptr0'], 'optimize_mem': True, 'no_x_dim': False, 'atomic_add_found': False, 'num_load': 3, 'num_store': 1, 'num_reduction': 0, 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': False, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'tiling_scores': {'x': 65536000}},
    min_elem_per_thread=0
)
@triton.jit
def triton_poi_fused_add_arange_embedding_unsqueeze_view_3(in_out_ptr0, in_ptr0, in_ptr1, in_ptr2, xnumel, XBLOCK : tl.constexpr):
    xnumel = 10485760
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = tl.full([XBLOCK], True, tl.int1)[:]
    x3 = xindex
    x4 = xindex // 1280
    x0 = (xindex % 1280)
    x5 = (xindex % 1310720)
    tmp0 = tl.load(in_out_ptr0 + (x3), None).to(tl.float32)
    tmp1 = tl.load(in_ptr0 + (x4), None, eviction_policy='evict_last')
    tmp8 = tl.load(in_ptr2 + (x5), None, eviction_policy='evict_last').to(tl.float32)
    tmp2 = tl.full([XBLOCK], 50257, tl.int32)
    tmp3 = tmp1 + tmp2
    tmp4 = tmp1 < 0
    tmp5 = tl.where(tmp4, tmp3, tmp1)
    tl.device_assert((0 <= tmp5) & (tmp5 < 50257), "index out of bounds: 0 <= tmp5 < 50257")
    tmp7 = tl.load(in_ptr1 + (x0 + 1280*tmp5), None).to(tl.float32)
    tmp9 = tmp7 + tmp8
    tmp10 = tmp0 + tmp9
    tl.store(in_out_ptr0 + (x3), tmp10, None)
''', device_str='cuda')


# kernel path: /tmp/torchinductor_root/ad/cadjldmqvahk4ykj2pb7qpolbbbg66l53n3miz5qmc5quggjuz3e.py
# Topologically Sorted Source Nodes: [mul, pow_1, mul_1, add_5, mul_2, tanh, add_6, hidden_states_4], Original ATen: [aten.mul, aten.pow, aten.add, aten.tanh]
# Source node to ATen node mapping:
#   add_5 => add_5
#   add_6 => add_6
#   hidden_states_4 => mul_3
#   mul => mul
#   mul_1 => mul_1
#   mul_2 => mul_2
#   pow_1 => pow_1
#   tanh => tanh
# Graph fragment:
#   %prenorm_linear_1 : Tensor "bf16[8, 1024, 5120][5242880, 5120, 1]cuda:0" = PlaceHolder[target=prenorm_linear_1]
#   %mul : Tensor "bf16[8, 1024, 5120][5242880, 5120, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%prenorm_linear_1, 0.5), kwargs = {})
#   %pow_1 : Tensor "bf16[8, 1024, 5120][5242880, 5120, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.pow.Tensor_Scalar](args = (%prenorm_linear_1, 3.0), kwargs = {})
#   %mul_1 : Tensor "bf16[8, 1024, 5120][5242880, 5120, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%pow_1, 0.044715), kwargs = {})
#   %add_5 : Tensor "bf16[8, 1024, 5120][5242880, 5120, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%prenorm_linear_1, %mul_1), kwargs = {})
#   %mul_2 : Tensor "bf16[8, 1024, 5120][5242880, 5120, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%add_5, 0.7978845608028654), kwargs = {})
#   %tanh : Tensor "bf16[8, 1024, 5120][5242880, 5120, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.tanh.default](args = (%mul_2,), kwargs = {})
#   %add_6 : Tensor "bf16[8, 1024, 5120][5242880, 5120, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%tanh, 1.0), kwargs = {})
#   %mul_3 : Tensor "bf16[8, 1024, 5120][5242880, 5120, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%mul, %add_6), kwargs = {})
#   return %mul_3
triton_poi_fused_add_mul_pow_tanh_4 = async_compile.triton('triton_poi_fused_add_mul_pow_tanh_4', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_gpu()

@triton_heuristics.pointwise(
    size_hints={'x': 67108864}, 
    filename=__file__,
    triton_meta={'signature': {'in_out_ptr0': '*bf16', 'xnumel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]]}]},
    inductor_meta={'grid_type': 'Grid1D', 'autotune_hints': set(), 'kernel_name': 'triton_poi_fused_add_mul_pow_tanh_4', 'mutated_arg_names': ['in_out_ptr0'], 'optimize_mem': True, 'no_x_dim': False, 'atomic_add_found': False, 'num_load': 1, 'num_store': 1, 'num_reduction': 0, 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': False, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'tiling_scores': {'x': 251658240}},
    min_elem_per_thread=0
)
@triton.jit
def triton_poi_fused_add_mul_pow_tanh_4(in_out_ptr0, xnumel, XBLOCK : tl.constexpr):
    xnumel = 41943040
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = tl.full([XBLOCK], True, tl.int1)[:]
    x0 = xindex
    tmp0 = tl.load(in_out_ptr0 + (x0), None).to(tl.float32)
    tmp1 = tl.full([1], 0.5, tl.float32)
    tmp2 = tmp0 * tmp1
    tmp3 = tmp0 * tmp0
    tmp4 = tmp3 * tmp0
    tmp5 = tl.full([1], 0.044715, tl.float32)
    tmp6 = tmp4 * tmp5
    tmp7 = tmp0 + tmp6
    tmp8 = tl.full([1], 0.7978845608028654, tl.float32)
    tmp9 = tmp7 * tmp8
    tmp10 = libdevice.tanh(tmp9)
    tmp11 = tl.full([1], 1.0, tl.float32)
    tmp12 = tmp10 + tmp11
    tmp13 = tmp2 * tmp12
    tl.store(in_out_ptr0 + (x0), tmp13, None)
''', device_str='cuda')


# kernel path: /tmp/torchinductor_root/pw/cpwbww5mxckevlxla334qkvnef5wzn6ixlqlk4wsf3b7tnjinko5.py
# Topologically Sorted Source Nodes: [x_3, hidden_states_6], Original ATen: [aten.view, aten.add]
# Source node to ATen node mapping:
#   hidden_states_6 => add_7
#   x_3 => view_9
# Graph fragment:
#   %add_4 : Tensor "bf16[8, 1024, 1280][1310720, 1280, 1]cuda:0" = PlaceHolder[target=add_4]
#   %addmm_1 : Tensor "bf16[8192, 1280][1280, 1]cuda:0" = PlaceHolder[target=addmm_1]
#   %view_9 : Tensor "bf16[8, 1024, 1280][1310720, 1280, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%addmm_1, [8, 1024, 1280]), kwargs = {})
#   %add_7 : Tensor "bf16[8, 1024, 1280][1310720, 1280, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.aten.add.Tensor](args = (%add_4, %view_9), kwargs = {})
#   return %add_7
triton_poi_fused_add_view_5 = async_compile.triton('triton_poi_fused_add_view_5', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_gpu()

@triton_heuristics.pointwise(
    size_hints={'x': 16777216}, 
    filename=__file__,
    triton_meta={'signature': {'in_out_ptr0': '*bf16', 'in_ptr0': '*bf16', 'xnumel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]]}]},
    inductor_meta={'grid_type': 'Grid1D', 'autotune_hints': set(), 'kernel_name': 'triton_poi_fused_add_view_5', 'mutated_arg_names': ['in_out_ptr0'], 'optimize_mem': True, 'no_x_dim': False, 'atomic_add_found': False, 'num_load': 2, 'num_store': 1, 'num_reduction': 0, 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': False, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'tiling_scores': {'x': 83886080}},
    min_elem_per_thread=0
)
@triton.jit
def triton_poi_fused_add_view_5(in_out_ptr0, in_ptr0, xnumel, XBLOCK : tl.constexpr):
    xnumel = 10485760
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = tl.full([XBLOCK], True, tl.int1)[:]
    x0 = xindex
    tmp0 = tl.load(in_out_ptr0 + (x0), None).to(tl.float32)
    tmp1 = tl.load(in_ptr0 + (x0), None).to(tl.float32)
    tmp2 = tmp0 + tmp1
    tl.store(in_out_ptr0 + (x0), tmp2, None)
''', device_str='cuda')


# kernel path: /tmp/torchinductor_root/du/cdu4kbsaarvcnsghgq5bqozykue5xhe65uaabzt3ny54ib7tafux.py
# Topologically Sorted Source Nodes: [x_15, hidden_states_21, hidden_states_22], Original ATen: [aten.view, aten.add, aten.native_layer_norm]
# Source node to ATen node mapping:
#   hidden_states_21 => add_19
#   hidden_states_22 => add_20, add_21, convert_element_type_24, convert_element_type_25, mul_16, mul_17, rsqrt, sub_2, var_mean
#   x_15 => view_36
# Graph fragment:
#   %add_16 : Tensor "bf16[8, 1024, 1280][1310720, 1280, 1]cuda:0" = PlaceHolder[target=add_16]
#   %addmm_7 : Tensor "bf16[8192, 1280][1280, 1]cuda:0" = PlaceHolder[target=addmm_7]
#   %getitem_49 : Tensor "f32[8, 1024, 1][1024, 1, 8192]cuda:0" = PlaceHolder[target=getitem_49]
#   %buf62 : Tensor "f32[8, 1024, 1][1024, 1, 8192]cuda:0" = PlaceHolder[target=buf62]
#   %arg51_1 : Tensor "bf16[1280][1]cuda:0" = PlaceHolder[target=arg51_1]
#   %arg52_1 : Tensor "bf16[1280][1]cuda:0" = PlaceHolder[target=arg52_1]
#   %view_36 : Tensor "bf16[8, 1024, 1280][1310720, 1280, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.reshape.default](args = (%addmm_7, [8, 1024, 1280]), kwargs = {})
#   %add_19 : Tensor "bf16[8, 1024, 1280][1310720, 1280, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%add_16, %view_36), kwargs = {})
#   %convert_element_type_24 : Tensor "f32[8, 1024, 1280][1310720, 1280, 1]cuda:0"[num_users=2] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%add_19, torch.float32), kwargs = {})
#   %var_mean : [num_users=2] = call_function[target=torch.ops.aten.var_mean.correction](args = (%convert_element_type_24, [2]), kwargs = {correction: 0, keepdim: True})
#   %sub_2 : Tensor "f32[8, 1024, 1280][1310720, 1280, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.sub.Tensor](args = (%convert_element_type_24, %getitem_49), kwargs = {})
#   %add_20 : Tensor "f32[8, 1024, 1][1024, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%getitem_48, 1e-05), kwargs = {})
#   %rsqrt : Tensor "f32[8, 1024, 1][1024, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.rsqrt.default](args = (%add_20,), kwargs = {})
#   %mul_16 : Tensor "f32[8, 1024, 1280][1310720, 1280, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%sub_2, %rsqrt), kwargs = {})
#   %mul_17 : Tensor "f32[8, 1024, 1280][1310720, 1280, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%mul_16, %arg51_1), kwargs = {})
#   %add_21 : Tensor "f32[8, 1024, 1280][1310720, 1280, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%mul_17, %arg52_1), kwargs = {})
#   %convert_element_type_25 : Tensor "bf16[8, 1024, 1280][1310720, 1280, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%add_21, torch.bfloat16), kwargs = {})
#   return %getitem_49,%buf62,%convert_element_type_25
triton_red_fused_add_native_layer_norm_view_6 = async_compile.triton('triton_red_fused_add_native_layer_norm_view_6', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_gpu()

@triton_heuristics.reduction(
    size_hints={'x': 8192, 'r0_': 2048},
    reduction_hint=ReductionHint.INNER,
    filename=__file__,
    triton_meta={'signature': {'in_out_ptr0': '*bf16', 'in_ptr0': '*bf16', 'in_ptr1': '*bf16', 'in_ptr2': '*bf16', 'xnumel': 'i32', 'r0_numel': 'i32', 'XBLOCK': 'constexpr', 'R0_BLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]], (3,): [['tt.divisibility', 16]], (4,): [['tt.divisibility', 16]], (5,): [['tt.divisibility', 16]]}]},
    inductor_meta={'grid_type': 'Grid1D', 'autotune_hints': set(), 'kernel_name': 'triton_red_fused_add_native_layer_norm_view_6', 'mutated_arg_names': ['in_out_ptr0'], 'optimize_mem': True, 'no_x_dim': False, 'atomic_add_found': False, 'num_load': 6, 'num_store': 1, 'num_reduction': 2, 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': False, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'tiling_scores': {'x': 0, 'r0_': 83891200}}
)
@triton.jit
def triton_red_fused_add_native_layer_norm_view_6(in_out_ptr0, in_ptr0, in_ptr1, in_ptr2, xnumel, r0_numel, XBLOCK : tl.constexpr, R0_BLOCK : tl.constexpr):
    xnumel = 8192
    r0_numel = 1280
    rnumel = r0_numel
    RBLOCK: tl.constexpr = R0_BLOCK
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = tl.full([XBLOCK], True, tl.int1)[:, None]
    r0_base = tl.arange(0, R0_BLOCK)[None, :]
    rbase = r0_base
    x0 = xindex
    tmp5_mean = tl.zeros([XBLOCK, R0_BLOCK], tl.float32)
    tmp5_m2 = tl.zeros([XBLOCK, R0_BLOCK], tl.float32)
    tmp5_weight = tl.zeros([XBLOCK, R0_BLOCK], tl.float32)
    for r0_offset in tl.range(0, r0_numel, R0_BLOCK):
        r0_index = r0_offset + r0_base
        r0_mask = r0_index < r0_numel
        roffset = r0_offset
        rindex = r0_index
        r0_1 = r0_index
        tmp0 = tl.load(in_out_ptr0 + (r0_1 + 1280*x0), r0_mask, eviction_policy='evict_last', other=0.0).to(tl.float32)
        tmp1 = tl.load(in_ptr0 + (r0_1 + 1280*x0), r0_mask, eviction_policy='evict_last', other=0.0).to(tl.float32)
        tmp2 = tmp0 + tmp1
        tmp3 = tmp2.to(tl.float32)
        tmp4 = tl.broadcast_to(tmp3, [XBLOCK, R0_BLOCK])
        tmp5_mean_next, tmp5_m2_next, tmp5_weight_next = triton_helpers.welford_reduce(
            tmp4, tmp5_mean, tmp5_m2, tmp5_weight, roffset == 0
        )
        tmp5_mean = tl.where(r0_mask, tmp5_mean_next, tmp5_mean)
        tmp5_m2 = tl.where(r0_mask, tmp5_m2_next, tmp5_m2)
        tmp5_weight = tl.where(r0_mask, tmp5_weight_next, tmp5_weight)
    tmp6, tmp7, tmp8 = triton_helpers.welford(tmp5_mean, tmp5_m2, tmp5_weight, 1)
    tmp5 = tmp6[:, None]
    tmp9 = tmp7[:, None]
    tmp10 = tmp8[:, None]
    for r0_offset in tl.range(0, r0_numel, R0_BLOCK):
        r0_index = r0_offset + r0_base
        r0_mask = r0_index < r0_numel
        roffset = r0_offset
        rindex = r0_index
        r0_1 = r0_index
        tmp11 = tl.load(in_out_ptr0 + (r0_1 + 1280*x0), r0_mask, eviction_policy='evict_first', other=0.0).to(tl.float32)
        tmp12 = tl.load(in_ptr0 + (r0_1 + 1280*x0), r0_mask, eviction_policy='evict_first', other=0.0).to(tl.float32)
        tmp22 = tl.load(in_ptr1 + (r0_1), r0_mask, eviction_policy='evict_last', other=0.0).to(tl.float32)
        tmp25 = tl.load(in_ptr2 + (r0_1), r0_mask, eviction_policy='evict_last', other=0.0).to(tl.float32)
        tmp13 = tmp11 + tmp12
        tmp14 = tmp13.to(tl.float32)
        tmp15 = tmp14 - tmp5
        tmp16 = tl.full([1, 1], 1280.0, tl.float32)
        tmp17 = (tmp9 / tmp16)
        tmp18 = tl.full([1, 1], 1e-05, tl.float32)
        tmp19 = tmp17 + tmp18
        tmp20 = libdevice.rsqrt(tmp19)
        tmp21 = tmp15 * tmp20
        tmp23 = tmp22.to(tl.float32)
        tmp24 = tmp21 * tmp23
        tmp26 = tmp25.to(tl.float32)
        tmp27 = tmp24 + tmp26
        tmp28 = tmp27.to(tl.float32)
        tl.store(in_out_ptr0 + (r0_1 + 1280*x0), tmp28, r0_mask)
''', device_str='cuda')


async_compile.wait(globals())
del async_compile

class Runner:
    def __init__(self, partitions):
        self.partitions = partitions

    def recursively_apply_fns(self, fns):
        new_callables = []
        for fn, c in zip(fns, self.partitions):
            new_callables.append(fn(c))
        self.partitions = new_callables

    def call(self, args):
        arg0_1, arg1_1, arg2_1, arg3_1, arg4_1, arg5_1, arg6_1, arg7_1, arg8_1, arg9_1, arg10_1, arg11_1, arg12_1, arg13_1, arg14_1, arg15_1, arg16_1, arg17_1, arg18_1, arg19_1, arg20_1, arg21_1, arg22_1, arg23_1, arg24_1, arg25_1, arg26_1, arg27_1, arg28_1, arg29_1, arg30_1, arg31_1, arg32_1, arg33_1, arg34_1, arg35_1, arg36_1, arg37_1, arg38_1, arg39_1, arg40_1, arg41_1, arg42_1, arg43_1, arg44_1, arg45_1, arg46_1, arg47_1, arg48_1, arg49_1, arg50_1, arg51_1, arg52_1 = args
        args.clear()
        assert_size_stride(arg0_1, (8, 1024), (1024, 1))
        assert_size_stride(arg1_1, (50257, 1280), (1280, 1))
        assert_size_stride(arg2_1, (1024, 1280), (1280, 1))
        assert_size_stride(arg3_1, (1280, ), (1, ))
        assert_size_stride(arg4_1, (1280, ), (1, ))
        assert_size_stride(arg5_1, (1280, 3840), (3840, 1))
        assert_size_stride(arg6_1, (3840, ), (1, ))
        assert_size_stride(arg7_1, (1280, ), (1, ))
        assert_size_stride(arg8_1, (1280, 1280), (1280, 1))
        assert_size_stride(arg9_1, (1280, ), (1, ))
        assert_size_stride(arg10_1, (1280, ), (1, ))
        assert_size_stride(arg11_1, (1280, 5120), (5120, 1))
        assert_size_stride(arg12_1, (5120, ), (1, ))
        assert_size_stride(arg13_1, (1280, ), (1, ))
        assert_size_stride(arg14_1, (5120, 1280), (1280, 1))
        assert_size_stride(arg15_1, (1280, ), (1, ))
        assert_size_stride(arg16_1, (1280, ), (1, ))
        assert_size_stride(arg17_1, (1280, 3840), (3840, 1))
        assert_size_stride(arg18_1, (3840, ), (1, ))
        assert_size_stride(arg19_1, (1280, ), (1, ))
        assert_size_stride(arg20_1, (1280, 1280), (1280, 1))
        assert_size_stride(arg21_1, (1280, ), (1, ))
        assert_size_stride(arg22_1, (1280, ), (1, ))
        assert_size_stride(arg23_1, (1280, 5120), (5120, 1))
        assert_size_stride(arg24_1, (5120, ), (1, ))
        assert_size_stride(arg25_1, (1280, ), (1, ))
        assert_size_stride(arg26_1, (5120, 1280), (1280, 1))
        assert_size_stride(arg27_1, (1280, ), (1, ))
        assert_size_stride(arg28_1, (1280, ), (1, ))
        assert_size_stride(arg29_1, (1280, 3840), (3840, 1))
        assert_size_stride(arg30_1, (3840, ), (1, ))
        assert_size_stride(arg31_1, (1280, ), (1, ))
        assert_size_stride(arg32_1, (1280, 1280), (1280, 1))
        assert_size_stride(arg33_1, (1280, ), (1, ))
        assert_size_stride(arg34_1, (1280, ), (1, ))
        assert_size_stride(arg35_1, (1280, 5120), (5120, 1))
        assert_size_stride(arg36_1, (5120, ), (1, ))
        assert_size_stride(arg37_1, (1280, ), (1, ))
        assert_size_stride(arg38_1, (5120, 1280), (1280, 1))
        assert_size_stride(arg39_1, (1280, ), (1, ))
        assert_size_stride(arg40_1, (1280, ), (1, ))
        assert_size_stride(arg41_1, (1280, 3840), (3840, 1))
        assert_size_stride(arg42_1, (3840, ), (1, ))
        assert_size_stride(arg43_1, (1280, ), (1, ))
        assert_size_stride(arg44_1, (1280, 1280), (1280, 1))
        assert_size_stride(arg45_1, (1280, ), (1, ))
        assert_size_stride(arg46_1, (1280, ), (1, ))
        assert_size_stride(arg47_1, (1280, 5120), (5120, 1))
        assert_size_stride(arg48_1, (5120, ), (1, ))
        assert_size_stride(arg49_1, (1280, ), (1, ))
        assert_size_stride(arg50_1, (5120, 1280), (1280, 1))
        assert_size_stride(arg51_1, (1280, ), (1, ))
        assert_size_stride(arg52_1, (1280, ), (1, ))
        with torch.cuda._DeviceGuard(0):
            torch.cuda.set_device(0)
            buf0 = empty_strided_cuda((8, 1024, 1280), (1310720, 1280, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [inputs_embeds, arange, position_ids, position_ids_1, position_embeds, hidden_states, prenorm_linear_default], Original ATen: [aten.embedding, aten.arange, aten.add, aten.unsqueeze, normfuse.prenorm_linear]
            stream0 = get_raw_stream(0)
            triton_poi_fused_add_arange_embedding_prenorm_linear_unsqueeze_0.run(arg0_1, arg1_1, arg2_1, buf0, 10485760, stream=stream0)
            # Topologically Sorted Source Nodes: [inputs_embeds, arange, position_ids, position_ids_1, position_embeds, hidden_states, prenorm_linear_default], Original ATen: [aten.embedding, aten.arange, aten.add, aten.unsqueeze, normfuse.prenorm_linear]
            buf1 = torch.ops.normfuse.prenorm_linear.default(buf0, arg3_1, arg4_1, [arg5_1], [arg6_1], 1e-05, 0.0, True, True, True)
            del arg3_1
            del arg4_1
            del arg5_1
            del arg6_1
            buf2 = buf1
            assert_size_stride(buf2, (8, 1024, 3840), (3932160, 3840, 1), 'torch.ops.normfuse.prenorm_linear.default')
            assert_alignment(buf2, 16, 'torch.ops.normfuse.prenorm_linear.default')
            del buf1
            buf3 = empty_strided_cuda((8, 1024), (1024, 1), torch.int64)
            # Topologically Sorted Source Nodes: [arange, position_ids, position_ids_1, position_ids_2, getitem, first_dummy_value, position_diff, ne, packed_sequence_mask], Original ATen: [aten.arange, aten.add, aten.unsqueeze, aten.expand, aten.slice, aten.sub, aten.cat, aten.ne, aten.cumsum]
            stream0 = get_raw_stream(0)
            triton_per_fused_add_arange_cat_cumsum_expand_ne_slice_sub_unsqueeze_1.run(buf3, 8, 1024, stream=stream0)
            buf4 = empty_strided_cuda((8, 1, 1024, 1024), (1048576, 1048576, 1024, 1), torch.bfloat16)
            buf19 = empty_strided_cuda((8, 1, 1024, 1024), (1048576, 1048576, 1024, 1), torch.bfloat16)
            buf34 = empty_strided_cuda((8, 1, 1024, 1024), (1048576, 1048576, 1024, 1), torch.bfloat16)
            buf49 = empty_strided_cuda((8, 1, 1024, 1024), (1048576, 1048576, 1024, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [arange, position_ids, position_ids_1, split, view_3, query_states_1, view_1, key_states_1, view_2, value_states_1, result, expand_1, batch_arange, batch_indices, arange_4, kv_arange, kv_indices, getitem_6, arange_3, q_arange, q_indices, getitem_5, le, result_1, getitem_7, getitem_8, eq, result_2, attention_mask, attn_output, split_1, view_10, query_states_3, view_8, key_states_3, view_9, value_states_3, attn_output_5, split_2, view_17, query_states_5, view_15, key_states_5, view_16, value_states_5, attn_output_10, split_3, view_24, query_states_7, view_22, key_states_7, view_23, value_states_7, attn_output_15], Original ATen: [aten.arange, aten.add, aten.unsqueeze, aten.split, aten.view, aten.transpose, aten.new_ones, aten.expand, aten.index, aten.le, aten.bitwise_and, aten.eq, aten.scalar_tensor, aten.where, aten._scaled_dot_product_cudnn_attention]
            stream0 = get_raw_stream(0)
            triton_poi_fused__scaled_dot_product_cudnn_attention_add_arange_bitwise_and_eq_expand_index_le_new_ones_scalar_tensor_split_transpose_unsqueeze_view_where_2.run(buf3, buf4, buf19, buf34, buf49, 8388608, stream=stream0)
            del buf3
            # Topologically Sorted Source Nodes: [arange, position_ids, position_ids_1, split, view_3, query_states_1, view_1, key_states_1, view_2, value_states_1, result, expand_1, batch_arange, batch_indices, arange_4, kv_arange, kv_indices, getitem_6, arange_3, q_arange, q_indices, getitem_5, le, result_1, getitem_7, getitem_8, eq, result_2, attention_mask, attn_output], Original ATen: [aten.arange, aten.add, aten.unsqueeze, aten.split, aten.view, aten.transpose, aten.new_ones, aten.expand, aten.index, aten.le, aten.bitwise_and, aten.eq, aten.scalar_tensor, aten.where, aten._scaled_dot_product_cudnn_attention]
            buf5 = torch.ops.aten._scaled_dot_product_cudnn_attention.default(reinterpret_tensor(buf2, (8, 20, 1024, 64), (3932160, 64, 3840, 1), 0), reinterpret_tensor(buf2, (8, 20, 1024, 64), (3932160, 64, 3840, 1), 1280), reinterpret_tensor(buf2, (8, 20, 1024, 64), (3932160, 64, 3840, 1), 2560), buf4, False, scale=0.125)
            del buf2
            del buf4
            buf6 = buf5[0]
            assert_size_stride(buf6, (8, 20, 1024, 64), (1310720, 64, 1280, 1), 'torch.ops.aten._scaled_dot_product_cudnn_attention.default')
            assert_alignment(buf6, 16, 'torch.ops.aten._scaled_dot_product_cudnn_attention.default')
            del buf5
            buf10 = reinterpret_tensor(buf0, (8192, 1280), (1280, 1), 0); del buf0  # reuse
            # Topologically Sorted Source Nodes: [transpose_3, reshape_1, view_4, x], Original ATen: [aten.transpose, aten.view, aten.addmm]
            extern_kernels.addmm(arg7_1, reinterpret_tensor(buf6, (8192, 1280), (1280, 1), 0), arg8_1, alpha=1, beta=1, out=buf10)
            del arg7_1
            del arg8_1
            del buf6
            buf11 = reinterpret_tensor(buf10, (8, 1024, 1280), (1310720, 1280, 1), 0); del buf10  # reuse
            # Topologically Sorted Source Nodes: [inputs_embeds, arange, position_ids, position_ids_1, position_embeds, hidden_states, x_1, hidden_states_2], Original ATen: [aten.embedding, aten.arange, aten.add, aten.unsqueeze, aten.view]
            stream0 = get_raw_stream(0)
            triton_poi_fused_add_arange_embedding_unsqueeze_view_3.run(buf11, arg0_1, arg1_1, arg2_1, 10485760, stream=stream0)
            del arg0_1
            del arg1_1
            del arg2_1
            # Topologically Sorted Source Nodes: [hidden_states_3], Original ATen: [normfuse.prenorm_linear]
            buf12 = torch.ops.normfuse.prenorm_linear.default(buf11, arg9_1, arg10_1, [arg11_1], [arg12_1], 1e-05, 0.0, True, True, True)
            del arg10_1
            del arg11_1
            del arg12_1
            del arg9_1
            buf13 = buf12
            assert_size_stride(buf13, (8, 1024, 5120), (5242880, 5120, 1), 'torch.ops.normfuse.prenorm_linear.default')
            assert_alignment(buf13, 16, 'torch.ops.normfuse.prenorm_linear.default')
            del buf12
            buf14 = buf13; del buf13  # reuse
            # Topologically Sorted Source Nodes: [mul, pow_1, mul_1, add_5, mul_2, tanh, add_6, hidden_states_4], Original ATen: [aten.mul, aten.pow, aten.add, aten.tanh]
            stream0 = get_raw_stream(0)
            triton_poi_fused_add_mul_pow_tanh_4.run(buf14, 41943040, stream=stream0)
            buf15 = empty_strided_cuda((8192, 1280), (1280, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [mul, pow_1, mul_1, add_5, mul_2, tanh, add_6, hidden_states_4, view_6, x_2], Original ATen: [aten.mul, aten.pow, aten.add, aten.tanh, aten.view, aten.addmm]
            extern_kernels.addmm(arg13_1, reinterpret_tensor(buf14, (8192, 5120), (5120, 1), 0), arg14_1, alpha=1, beta=1, out=buf15)
            del arg13_1
            del arg14_1
            del buf14
            buf16 = buf11; del buf11  # reuse
            # Topologically Sorted Source Nodes: [x_3, hidden_states_6], Original ATen: [aten.view, aten.add]
            stream0 = get_raw_stream(0)
            triton_poi_fused_add_view_5.run(buf16, buf15, 10485760, stream=stream0)
            # Topologically Sorted Source Nodes: [prenorm_linear_default_2], Original ATen: [normfuse.prenorm_linear]
            buf17 = torch.ops.normfuse.prenorm_linear.default(buf16, arg15_1, arg16_1, [arg17_1], [arg18_1], 1e-05, 0.0, True, True, True)
            del arg15_1
            del arg16_1
            del arg17_1
            del arg18_1
            buf18 = buf17
            assert_size_stride(buf18, (8, 1024, 3840), (3932160, 3840, 1), 'torch.ops.normfuse.prenorm_linear.default')
            assert_alignment(buf18, 16, 'torch.ops.normfuse.prenorm_linear.default')
            del buf17
            # Topologically Sorted Source Nodes: [arange, position_ids, position_ids_1, result, expand_1, batch_arange, batch_indices, arange_4, kv_arange, kv_indices, getitem_6, arange_3, q_arange, q_indices, getitem_5, le, result_1, getitem_7, getitem_8, eq, result_2, attention_mask, split_1, view_10, query_states_3, view_8, key_states_3, view_9, value_states_3, attn_output_5], Original ATen: [aten.arange, aten.add, aten.unsqueeze, aten.new_ones, aten.expand, aten.index, aten.le, aten.bitwise_and, aten.eq, aten.split, aten.view, aten.transpose, aten.scalar_tensor, aten.where, aten._scaled_dot_product_cudnn_attention]
            buf20 = torch.ops.aten._scaled_dot_product_cudnn_attention.default(reinterpret_tensor(buf18, (8, 20, 1024, 64), (3932160, 64, 3840, 1), 0), reinterpret_tensor(buf18, (8, 20, 1024, 64), (3932160, 64, 3840, 1), 1280), reinterpret_tensor(buf18, (8, 20, 1024, 64), (3932160, 64, 3840, 1), 2560), buf19, False, scale=0.125)
            del buf18
            del buf19
            buf21 = buf20[0]
            assert_size_stride(buf21, (8, 20, 1024, 64), (1310720, 64, 1280, 1), 'torch.ops.aten._scaled_dot_product_cudnn_attention.default')
            assert_alignment(buf21, 16, 'torch.ops.aten._scaled_dot_product_cudnn_attention.default')
            del buf20
            buf25 = buf15; del buf15  # reuse
            # Topologically Sorted Source Nodes: [transpose_7, reshape_3, view_11, x_4], Original ATen: [aten.transpose, aten.view, aten.addmm]
            extern_kernels.addmm(arg19_1, reinterpret_tensor(buf21, (8192, 1280), (1280, 1), 0), arg20_1, alpha=1, beta=1, out=buf25)
            del arg19_1
            del arg20_1
            del buf21
            buf26 = reinterpret_tensor(buf25, (8, 1024, 1280), (1310720, 1280, 1), 0); del buf25  # reuse
            # Topologically Sorted Source Nodes: [x_5, hidden_states_7], Original ATen: [aten.view, aten.add]
            stream0 = get_raw_stream(0)
            triton_poi_fused_add_view_5.run(buf26, buf16, 10485760, stream=stream0)
            del buf16
            # Topologically Sorted Source Nodes: [hidden_states_8], Original ATen: [normfuse.prenorm_linear]
            buf27 = torch.ops.normfuse.prenorm_linear.default(buf26, arg21_1, arg22_1, [arg23_1], [arg24_1], 1e-05, 0.0, True, True, True)
            del arg21_1
            del arg22_1
            del arg23_1
            del arg24_1
            buf28 = buf27
            assert_size_stride(buf28, (8, 1024, 5120), (5242880, 5120, 1), 'torch.ops.normfuse.prenorm_linear.default')
            assert_alignment(buf28, 16, 'torch.ops.normfuse.prenorm_linear.default')
            del buf27
            buf29 = buf28; del buf28  # reuse
            # Topologically Sorted Source Nodes: [mul_4, pow_2, mul_5, add_9, mul_6, tanh_1, add_10, hidden_states_9], Original ATen: [aten.mul, aten.pow, aten.add, aten.tanh]
            stream0 = get_raw_stream(0)
            triton_poi_fused_add_mul_pow_tanh_4.run(buf29, 41943040, stream=stream0)
            buf30 = empty_strided_cuda((8192, 1280), (1280, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [mul_4, pow_2, mul_5, add_9, mul_6, tanh_1, add_10, hidden_states_9, view_13, x_6], Original ATen: [aten.mul, aten.pow, aten.add, aten.tanh, aten.view, aten.addmm]
            extern_kernels.addmm(arg25_1, reinterpret_tensor(buf29, (8192, 5120), (5120, 1), 0), arg26_1, alpha=1, beta=1, out=buf30)
            del arg25_1
            del arg26_1
            del buf29
            buf31 = buf26; del buf26  # reuse
            # Topologically Sorted Source Nodes: [x_7, hidden_states_11], Original ATen: [aten.view, aten.add]
            stream0 = get_raw_stream(0)
            triton_poi_fused_add_view_5.run(buf31, buf30, 10485760, stream=stream0)
            # Topologically Sorted Source Nodes: [prenorm_linear_default_4], Original ATen: [normfuse.prenorm_linear]
            buf32 = torch.ops.normfuse.prenorm_linear.default(buf31, arg27_1, arg28_1, [arg29_1], [arg30_1], 1e-05, 0.0, True, True, True)
            del arg27_1
            del arg28_1
            del arg29_1
            del arg30_1
            buf33 = buf32
            assert_size_stride(buf33, (8, 1024, 3840), (3932160, 3840, 1), 'torch.ops.normfuse.prenorm_linear.default')
            assert_alignment(buf33, 16, 'torch.ops.normfuse.prenorm_linear.default')
            del buf32
            # Topologically Sorted Source Nodes: [arange, position_ids, position_ids_1, result, expand_1, batch_arange, batch_indices, arange_4, kv_arange, kv_indices, getitem_6, arange_3, q_arange, q_indices, getitem_5, le, result_1, getitem_7, getitem_8, eq, result_2, attention_mask, split_2, view_17, query_states_5, view_15, key_states_5, view_16, value_states_5, attn_output_10], Original ATen: [aten.arange, aten.add, aten.unsqueeze, aten.new_ones, aten.expand, aten.index, aten.le, aten.bitwise_and, aten.eq, aten.split, aten.view, aten.transpose, aten.scalar_tensor, aten.where, aten._scaled_dot_product_cudnn_attention]
            buf35 = torch.ops.aten._scaled_dot_product_cudnn_attention.default(reinterpret_tensor(buf33, (8, 20, 1024, 64), (3932160, 64, 3840, 1), 0), reinterpret_tensor(buf33, (8, 20, 1024, 64), (3932160, 64, 3840, 1), 1280), reinterpret_tensor(buf33, (8, 20, 1024, 64), (3932160, 64, 3840, 1), 2560), buf34, False, scale=0.125)
            del buf33
            del buf34
            buf36 = buf35[0]
            assert_size_stride(buf36, (8, 20, 1024, 64), (1310720, 64, 1280, 1), 'torch.ops.aten._scaled_dot_product_cudnn_attention.default')
            assert_alignment(buf36, 16, 'torch.ops.aten._scaled_dot_product_cudnn_attention.default')
            del buf35
            buf40 = buf30; del buf30  # reuse
            # Topologically Sorted Source Nodes: [transpose_11, reshape_5, view_18, x_8], Original ATen: [aten.transpose, aten.view, aten.addmm]
            extern_kernels.addmm(arg31_1, reinterpret_tensor(buf36, (8192, 1280), (1280, 1), 0), arg32_1, alpha=1, beta=1, out=buf40)
            del arg31_1
            del arg32_1
            del buf36
            buf41 = reinterpret_tensor(buf40, (8, 1024, 1280), (1310720, 1280, 1), 0); del buf40  # reuse
            # Topologically Sorted Source Nodes: [x_9, hidden_states_12], Original ATen: [aten.view, aten.add]
            stream0 = get_raw_stream(0)
            triton_poi_fused_add_view_5.run(buf41, buf31, 10485760, stream=stream0)
            # Topologically Sorted Source Nodes: [hidden_states_13], Original ATen: [normfuse.prenorm_linear]
            buf42 = torch.ops.normfuse.prenorm_linear.default(buf41, arg33_1, arg34_1, [arg35_1], [arg36_1], 1e-05, 0.0, True, True, True)
            del arg33_1
            del arg34_1
            del arg35_1
            del arg36_1
            buf43 = buf42
            assert_size_stride(buf43, (8, 1024, 5120), (5242880, 5120, 1), 'torch.ops.normfuse.prenorm_linear.default')
            assert_alignment(buf43, 16, 'torch.ops.normfuse.prenorm_linear.default')
            del buf42
            buf44 = buf43; del buf43  # reuse
            # Topologically Sorted Source Nodes: [mul_8, pow_3, mul_9, add_13, mul_10, tanh_2, add_14, hidden_states_14], Original ATen: [aten.mul, aten.pow, aten.add, aten.tanh]
            stream0 = get_raw_stream(0)
            triton_poi_fused_add_mul_pow_tanh_4.run(buf44, 41943040, stream=stream0)
            buf45 = reinterpret_tensor(buf31, (8192, 1280), (1280, 1), 0); del buf31  # reuse
            # Topologically Sorted Source Nodes: [mul_8, pow_3, mul_9, add_13, mul_10, tanh_2, add_14, hidden_states_14, view_20, x_10], Original ATen: [aten.mul, aten.pow, aten.add, aten.tanh, aten.view, aten.addmm]
            extern_kernels.addmm(arg37_1, reinterpret_tensor(buf44, (8192, 5120), (5120, 1), 0), arg38_1, alpha=1, beta=1, out=buf45)
            del arg37_1
            del arg38_1
            del buf44
            buf46 = buf41; del buf41  # reuse
            # Topologically Sorted Source Nodes: [x_11, hidden_states_16], Original ATen: [aten.view, aten.add]
            stream0 = get_raw_stream(0)
            triton_poi_fused_add_view_5.run(buf46, buf45, 10485760, stream=stream0)
            # Topologically Sorted Source Nodes: [prenorm_linear_default_6], Original ATen: [normfuse.prenorm_linear]
            buf47 = torch.ops.normfuse.prenorm_linear.default(buf46, arg39_1, arg40_1, [arg41_1], [arg42_1], 1e-05, 0.0, True, True, True)
            del arg39_1
            del arg40_1
            del arg41_1
            del arg42_1
            buf48 = buf47
            assert_size_stride(buf48, (8, 1024, 3840), (3932160, 3840, 1), 'torch.ops.normfuse.prenorm_linear.default')
            assert_alignment(buf48, 16, 'torch.ops.normfuse.prenorm_linear.default')
            del buf47
            # Topologically Sorted Source Nodes: [arange, position_ids, position_ids_1, result, expand_1, batch_arange, batch_indices, arange_4, kv_arange, kv_indices, getitem_6, arange_3, q_arange, q_indices, getitem_5, le, result_1, getitem_7, getitem_8, eq, result_2, attention_mask, split_3, view_24, query_states_7, view_22, key_states_7, view_23, value_states_7, attn_output_15], Original ATen: [aten.arange, aten.add, aten.unsqueeze, aten.new_ones, aten.expand, aten.index, aten.le, aten.bitwise_and, aten.eq, aten.split, aten.view, aten.transpose, aten.scalar_tensor, aten.where, aten._scaled_dot_product_cudnn_attention]
            buf50 = torch.ops.aten._scaled_dot_product_cudnn_attention.default(reinterpret_tensor(buf48, (8, 20, 1024, 64), (3932160, 64, 3840, 1), 0), reinterpret_tensor(buf48, (8, 20, 1024, 64), (3932160, 64, 3840, 1), 1280), reinterpret_tensor(buf48, (8, 20, 1024, 64), (3932160, 64, 3840, 1), 2560), buf49, False, scale=0.125)
            del buf48
            del buf49
            buf51 = buf50[0]
            assert_size_stride(buf51, (8, 20, 1024, 64), (1310720, 64, 1280, 1), 'torch.ops.aten._scaled_dot_product_cudnn_attention.default')
            assert_alignment(buf51, 16, 'torch.ops.aten._scaled_dot_product_cudnn_attention.default')
            del buf50
            buf55 = buf45; del buf45  # reuse
            # Topologically Sorted Source Nodes: [transpose_15, reshape_7, view_25, x_12], Original ATen: [aten.transpose, aten.view, aten.addmm]
            extern_kernels.addmm(arg43_1, reinterpret_tensor(buf51, (8192, 1280), (1280, 1), 0), arg44_1, alpha=1, beta=1, out=buf55)
            del arg43_1
            del arg44_1
            del buf51
            buf56 = reinterpret_tensor(buf55, (8, 1024, 1280), (1310720, 1280, 1), 0); del buf55  # reuse
            # Topologically Sorted Source Nodes: [x_13, hidden_states_17], Original ATen: [aten.view, aten.add]
            stream0 = get_raw_stream(0)
            triton_poi_fused_add_view_5.run(buf56, buf46, 10485760, stream=stream0)
            # Topologically Sorted Source Nodes: [hidden_states_18], Original ATen: [normfuse.prenorm_linear]
            buf57 = torch.ops.normfuse.prenorm_linear.default(buf56, arg45_1, arg46_1, [arg47_1], [arg48_1], 1e-05, 0.0, True, True, True)
            del arg45_1
            del arg46_1
            del arg47_1
            del arg48_1
            buf58 = buf57
            assert_size_stride(buf58, (8, 1024, 5120), (5242880, 5120, 1), 'torch.ops.normfuse.prenorm_linear.default')
            assert_alignment(buf58, 16, 'torch.ops.normfuse.prenorm_linear.default')
            del buf57
            buf59 = buf58; del buf58  # reuse
            # Topologically Sorted Source Nodes: [mul_12, pow_4, mul_13, add_17, mul_14, tanh_3, add_18, hidden_states_19], Original ATen: [aten.mul, aten.pow, aten.add, aten.tanh]
            stream0 = get_raw_stream(0)
            triton_poi_fused_add_mul_pow_tanh_4.run(buf59, 41943040, stream=stream0)
            buf60 = reinterpret_tensor(buf46, (8192, 1280), (1280, 1), 0); del buf46  # reuse
            # Topologically Sorted Source Nodes: [mul_12, pow_4, mul_13, add_17, mul_14, tanh_3, add_18, hidden_states_19, view_27, x_14], Original ATen: [aten.mul, aten.pow, aten.add, aten.tanh, aten.view, aten.addmm]
            extern_kernels.addmm(arg49_1, reinterpret_tensor(buf59, (8192, 5120), (5120, 1), 0), arg50_1, alpha=1, beta=1, out=buf60)
            del arg49_1
            del arg50_1
            del buf59
            buf64 = buf56; del buf56  # reuse
            # Topologically Sorted Source Nodes: [x_15, hidden_states_21, hidden_states_22], Original ATen: [aten.view, aten.add, aten.native_layer_norm]
            stream0 = get_raw_stream(0)
            triton_red_fused_add_native_layer_norm_view_6.run(buf64, buf60, arg51_1, arg52_1, 8192, 1280, stream=stream0)
            del arg51_1
            del arg52_1
            del buf60
        return (buf64, )

runner = Runner(partitions=[])
call = runner.call
recursively_apply_fns = runner.recursively_apply_fns


def get_args():
    from torch._dynamo.testing import rand_strided
    arg0_1 = rand_strided((8, 1024), (1024, 1), device='cuda:0', dtype=torch.int64)
    arg1_1 = rand_strided((50257, 1280), (1280, 1), device='cuda:0', dtype=torch.bfloat16)
    arg2_1 = rand_strided((1024, 1280), (1280, 1), device='cuda:0', dtype=torch.bfloat16)
    arg3_1 = rand_strided((1280, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg4_1 = rand_strided((1280, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg5_1 = rand_strided((1280, 3840), (3840, 1), device='cuda:0', dtype=torch.bfloat16)
    arg6_1 = rand_strided((3840, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg7_1 = rand_strided((1280, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg8_1 = rand_strided((1280, 1280), (1280, 1), device='cuda:0', dtype=torch.bfloat16)
    arg9_1 = rand_strided((1280, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg10_1 = rand_strided((1280, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg11_1 = rand_strided((1280, 5120), (5120, 1), device='cuda:0', dtype=torch.bfloat16)
    arg12_1 = rand_strided((5120, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg13_1 = rand_strided((1280, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg14_1 = rand_strided((5120, 1280), (1280, 1), device='cuda:0', dtype=torch.bfloat16)
    arg15_1 = rand_strided((1280, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg16_1 = rand_strided((1280, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg17_1 = rand_strided((1280, 3840), (3840, 1), device='cuda:0', dtype=torch.bfloat16)
    arg18_1 = rand_strided((3840, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg19_1 = rand_strided((1280, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg20_1 = rand_strided((1280, 1280), (1280, 1), device='cuda:0', dtype=torch.bfloat16)
    arg21_1 = rand_strided((1280, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg22_1 = rand_strided((1280, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg23_1 = rand_strided((1280, 5120), (5120, 1), device='cuda:0', dtype=torch.bfloat16)
    arg24_1 = rand_strided((5120, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg25_1 = rand_strided((1280, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg26_1 = rand_strided((5120, 1280), (1280, 1), device='cuda:0', dtype=torch.bfloat16)
    arg27_1 = rand_strided((1280, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg28_1 = rand_strided((1280, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg29_1 = rand_strided((1280, 3840), (3840, 1), device='cuda:0', dtype=torch.bfloat16)
    arg30_1 = rand_strided((3840, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg31_1 = rand_strided((1280, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg32_1 = rand_strided((1280, 1280), (1280, 1), device='cuda:0', dtype=torch.bfloat16)
    arg33_1 = rand_strided((1280, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg34_1 = rand_strided((1280, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg35_1 = rand_strided((1280, 5120), (5120, 1), device='cuda:0', dtype=torch.bfloat16)
    arg36_1 = rand_strided((5120, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg37_1 = rand_strided((1280, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg38_1 = rand_strided((5120, 1280), (1280, 1), device='cuda:0', dtype=torch.bfloat16)
    arg39_1 = rand_strided((1280, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg40_1 = rand_strided((1280, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg41_1 = rand_strided((1280, 3840), (3840, 1), device='cuda:0', dtype=torch.bfloat16)
    arg42_1 = rand_strided((3840, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg43_1 = rand_strided((1280, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg44_1 = rand_strided((1280, 1280), (1280, 1), device='cuda:0', dtype=torch.bfloat16)
    arg45_1 = rand_strided((1280, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg46_1 = rand_strided((1280, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg47_1 = rand_strided((1280, 5120), (5120, 1), device='cuda:0', dtype=torch.bfloat16)
    arg48_1 = rand_strided((5120, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg49_1 = rand_strided((1280, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg50_1 = rand_strided((5120, 1280), (1280, 1), device='cuda:0', dtype=torch.bfloat16)
    arg51_1 = rand_strided((1280, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    arg52_1 = rand_strided((1280, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    return [arg0_1, arg1_1, arg2_1, arg3_1, arg4_1, arg5_1, arg6_1, arg7_1, arg8_1, arg9_1, arg10_1, arg11_1, arg12_1, arg13_1, arg14_1, arg15_1, arg16_1, arg17_1, arg18_1, arg19_1, arg20_1, arg21_1, arg22_1, arg23_1, arg24_1, arg25_1, arg26_1, arg27_1, arg28_1, arg29_1, arg30_1, arg31_1, arg32_1, arg33_1, arg34_1, arg35_1, arg36_1, arg37_1, arg38_1, arg39_1, arg40_1, arg41_1, arg42_1, arg43_1, arg44_1, arg45_1, arg46_1, arg47_1, arg48_1, arg49_1, arg50_1, arg51_1, arg52_1]


def benchmark_compiled_module(args, times=10, repeat=10):
    from torch._inductor.utils import print_performance
    fn = lambda: call(list(args))
    return print_performance(fn, times=times, repeat=repeat)


if __name__ == "__main__":
    from torch._inductor.wrapper_benchmark import compiled_module_main
    args = get_args()
    compiled_module_main('None', lambda times, repeat: benchmark_compiled_module(args, times=times, repeat=repeat))
