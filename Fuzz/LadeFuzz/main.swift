// libFuzzer's driver, started from our own `main`: SwiftPM names an executable's entry point
// after its module, so libFuzzer's `main` cannot be used; LLVMFuzzerRunDriver is its public
// equivalent (LLVM 13 and later), with the same flags.
import Foundation

@_silgen_name("LLVMFuzzerRunDriver")
func runFuzzerDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt) -> CInt

var argc = CommandLine.argc
var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
exit(runFuzzerDriver(&argc, &argv) { start, count in fuzzOneInput(start, count) })
