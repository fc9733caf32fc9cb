; BAD: inline PTX that ptxas rejects, in a kernel with line info: the ptxas
; error names a PTX line, whose .loc leads back to kernels/scale.lua:8.
target datalayout = "e-p:64:64:64-i1:8:8-i8:8:8-i16:16:16-i32:32:32-i64:64:64-i128:128:128-f32:32:32-f64:64:64-v16:16:16-v32:32:32-v64:64:64-v128:128:128-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()

define void @scale_bad(float addrspace(1)* %x) !dbg !10 {
entry:
  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x(), !dbg !20
  %p = getelementptr float, float addrspace(1)* %x, i32 %t, !dbg !21
  %v = load float, float addrspace(1)* %p, align 4, !dbg !21
  %m = fmul float %v, 2.0, !dbg !22
  call void asm sideeffect "frobnicate.b32 0;", ""(), !dbg !22
  store float %m, float addrspace(1)* %p, align 4, !dbg !22
  ret void, !dbg !23
}

!nvvm.annotations = !{!0}
!0 = !{void (float addrspace(1)*)* @scale_bad, !"kernel", i32 1}
!nvvmir.version = !{!1}
!1 = !{i32 2, i32 0, i32 3, i32 1}
!llvm.dbg.cu = !{!2}
!llvm.module.flags = !{!4}
!2 = distinct !DICompileUnit(language: DW_LANG_C99, file: !3, producer: "cutelua", isOptimized: true, runtimeVersion: 0, emissionKind: DebugDirectivesOnly)
!3 = !DIFile(filename: "kernels/scale.lua", directory: "/work")
!4 = !{i32 2, !"Debug Info Version", i32 3}
!10 = distinct !DISubprogram(name: "scale", scope: !3, file: !3, line: 5, type: !11, isLocal: false, isDefinition: true, scopeLine: 5, isOptimized: true, unit: !2)
!11 = !DISubroutineType(types: !12)
!12 = !{null}
!20 = !DILocation(line: 6, column: 3, scope: !10)
!21 = !DILocation(line: 7, column: 3, scope: !10)
!22 = !DILocation(line: 8, column: 5, scope: !10)
!23 = !DILocation(line: 9, column: 1, scope: !10)
