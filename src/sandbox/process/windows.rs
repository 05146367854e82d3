//! Windows: the worker process's confinement, after Chromium's sandbox (issue 43).
//!
//! Host side (`spawn`): the worker is created suspended, with only its three standard handles
//! inherited (`PROC_THREAD_ATTRIBUTE_HANDLE_LIST`), mitigation policies on (no dynamic code, no
//! extension points, no images from Low-labelled files) and no child processes
//! (`PROC_THREAD_ATTRIBUTE_CHILD_PROCESS_POLICY`); it is put in a job object of its own — killed
//! when the job's last handle closes (the host's: a host that dies takes its workers along), at
//! most one active process, a per-process commit limit, no error box on a crash, no UI — and only
//! then resumed.
//!
//! Worker side (`confine`): once the library is mapped and every thread is warm, before it reads a
//! script, the worker lowers its own token to Low integrity (a Low process cannot write to anything
//! labelled Medium — the user's files, registry, other processes) and forbids dynamic code again
//! (for a Windows that did not take the creation attribute), then checks that the token says Low.
//!
//! What is not here: an AppContainer (no network) needs ACLs on the package's files for
//! "ALL APPLICATION PACKAGES"; reads of files a Low process may read are not blocked (README's
//! isolation table). Wine runs job objects, kill-on-close and handle lists but keeps no integrity
//! levels and no mitigation policies: under Wine (`wine_get_version` in ntdll) a token that stays
//! as it was is a warning, on Windows it refuses scripts.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::os::windows::ffi::OsStrExt;
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle, RawHandle};
use std::path::Path;

use windows_sys::Win32::Foundation::{
  GetLastError, SetHandleInformation, ERROR_ACCESS_DENIED, ERROR_INVALID_PARAMETER, ERROR_NOT_SUPPORTED, HANDLE,
  HANDLE_FLAG_INHERIT, INVALID_HANDLE_VALUE, WAIT_OBJECT_0,
};
use windows_sys::Win32::Security::{
  CreateWellKnownSid, GetSidSubAuthority, GetSidSubAuthorityCount, GetTokenInformation, SetTokenInformation,
  TokenIntegrityLevel, WinLowLabelSid, SECURITY_MAX_SID_SIZE, SID_AND_ATTRIBUTES, TOKEN_ADJUST_DEFAULT,
  TOKEN_MANDATORY_LABEL, TOKEN_QUERY,
};
use windows_sys::Win32::System::Diagnostics::Debug::{SetErrorMode, SEM_FAILCRITICALERRORS, SEM_NOGPFAULTERRORBOX};
use windows_sys::Win32::System::JobObjects::{
  AssignProcessToJobObject, CreateJobObjectW, JobObjectBasicUIRestrictions, JobObjectExtendedLimitInformation,
  SetInformationJobObject, TerminateJobObject, JOBOBJECTINFOCLASS, JOBOBJECT_BASIC_UI_RESTRICTIONS,
  JOBOBJECT_EXTENDED_LIMIT_INFORMATION, JOB_OBJECT_LIMIT_ACTIVE_PROCESS, JOB_OBJECT_LIMIT_DIE_ON_UNHANDLED_EXCEPTION,
  JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE, JOB_OBJECT_LIMIT_PROCESS_MEMORY, JOB_OBJECT_UILIMIT_DESKTOP,
  JOB_OBJECT_UILIMIT_DISPLAYSETTINGS, JOB_OBJECT_UILIMIT_EXITWINDOWS, JOB_OBJECT_UILIMIT_GLOBALATOMS,
  JOB_OBJECT_UILIMIT_HANDLES, JOB_OBJECT_UILIMIT_READCLIPBOARD, JOB_OBJECT_UILIMIT_SYSTEMPARAMETERS,
  JOB_OBJECT_UILIMIT_WRITECLIPBOARD,
};
use windows_sys::Win32::System::LibraryLoader::{GetModuleHandleW, GetProcAddress};
use windows_sys::Win32::System::Pipes::CreatePipe;
use windows_sys::Win32::System::SystemServices::{
  PROCESS_MITIGATION_DYNAMIC_CODE_POLICY, SECURITY_MANDATORY_LOW_RID, SE_GROUP_INTEGRITY,
};
use windows_sys::Win32::System::Threading::{
  CreateProcessW, DeleteProcThreadAttributeList, GetCurrentProcess, GetExitCodeProcess,
  InitializeProcThreadAttributeList, OpenProcessToken, ProcessDynamicCodePolicy, ResumeThread,
  SetProcessMitigationPolicy, TerminateProcess, UpdateProcThreadAttribute, WaitForSingleObject, CREATE_SUSPENDED,
  CREATE_UNICODE_ENVIRONMENT, DETACHED_PROCESS, EXTENDED_STARTUPINFO_PRESENT, INFINITE, LPPROC_THREAD_ATTRIBUTE_LIST,
  PROCESS_INFORMATION, PROC_THREAD_ATTRIBUTE_CHILD_PROCESS_POLICY, PROC_THREAD_ATTRIBUTE_HANDLE_LIST,
  PROC_THREAD_ATTRIBUTE_MITIGATION_POLICY, STARTF_USESTDHANDLES, STARTUPINFOEXW,
};

pub use super::winjob::{describe_exit, mitigation, JobSettings, CHILD_PROCESS_RESTRICTED, KILLED, UI_LIMITS};

/// The job's limits as Windows takes them (`JobSettings`, checked on every OS by its unit tests).
pub fn job_limits(memory: u64) -> JOBOBJECT_EXTENDED_LIMIT_INFORMATION {
  let job = JobSettings::worker(memory);
  // SAFETY: a plain C struct of integers, for which all-zero is the documented "no limit" value.
  let mut info: JOBOBJECT_EXTENDED_LIMIT_INFORMATION = unsafe { std::mem::zeroed() };
  info.BasicLimitInformation.LimitFlags = job.limit_flags;
  info.BasicLimitInformation.ActiveProcessLimit = job.active_processes;
  info.ProcessMemoryLimit = usize::try_from(job.process_memory).unwrap_or(usize::MAX);
  info
}

// The numbers of `winjob` are Windows' own.
const _: () = assert!(
  super::winjob::LIMIT_FLAGS
    == JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
      | JOB_OBJECT_LIMIT_ACTIVE_PROCESS
      | JOB_OBJECT_LIMIT_PROCESS_MEMORY
      | JOB_OBJECT_LIMIT_DIE_ON_UNHANDLED_EXCEPTION
);
const _: () = assert!(
  UI_LIMITS
    == JOB_OBJECT_UILIMIT_DESKTOP
      | JOB_OBJECT_UILIMIT_DISPLAYSETTINGS
      | JOB_OBJECT_UILIMIT_EXITWINDOWS
      | JOB_OBJECT_UILIMIT_GLOBALATOMS
      | JOB_OBJECT_UILIMIT_HANDLES
      | JOB_OBJECT_UILIMIT_READCLIPBOARD
      | JOB_OBJECT_UILIMIT_SYSTEMPARAMETERS
      | JOB_OBJECT_UILIMIT_WRITECLIPBOARD
);

/// A worker process and the job that holds it. Dropping it closes the job: the worker dies.
pub struct Worker {
  process: OwnedHandle,
  job: OwnedHandle,
  pid: u32,
}

impl Worker {
  pub fn id(&self) -> u32 {
    self.pid
  }

  /// Ends the worker at once (the whole job: it may hold nothing else).
  pub fn kill(&mut self) {
    // SAFETY: `job` is a live job handle owned by `self`.
    unsafe { TerminateJobObject(self.job.as_raw_handle() as HANDLE, KILLED) };
  }

  /// Whether the worker has ended, without waiting.
  pub fn has_ended(&self) -> bool {
    // SAFETY: `process` is a live process handle owned by `self`.
    unsafe { WaitForSingleObject(self.process.as_raw_handle() as HANDLE, 0) == WAIT_OBJECT_0 }
  }

  /// Waits for the worker to end; its exit code.
  pub fn wait(&mut self) -> Option<u32> {
    let process = self.process.as_raw_handle() as HANDLE;
    // SAFETY: `process` is a live process handle owned by `self`.
    if unsafe { WaitForSingleObject(process, INFINITE) } != WAIT_OBJECT_0 {
      return None;
    }
    let mut code = 0u32;
    // SAFETY: as above; `code` is a writable u32.
    (unsafe { GetExitCodeProcess(process, &mut code) } != 0).then_some(code)
  }
}

fn last_error(what: &str) -> String {
  // SAFETY: reads the calling thread's last-error value.
  let code = unsafe { GetLastError() };
  format!("{what} failed: {}", std::io::Error::from_raw_os_error(code as i32))
}

fn wide(s: &OsStr) -> Vec<u16> {
  s.encode_wide().chain(Some(0)).collect()
}

/// `"path"` as one argument of a command line (a path holds no `"`).
fn command_line(exe: &Path) -> Vec<u16> {
  let mut line = OsString::from("\"");
  line.push(exe.as_os_str());
  line.push("\"");
  wide(&line)
}

/// `K=V\0...\0\0`, sorted by name as Windows expects, UTF-16.
fn environment_block(env: &[(OsString, OsString)]) -> Vec<u16> {
  let mut vars: Vec<&(OsString, OsString)> = env.iter().collect();
  vars.sort_by_key(|(k, _)| k.to_string_lossy().to_uppercase());
  let mut block = Vec::new();
  for (k, v) in vars {
    block.extend(k.encode_wide());
    block.push(u16::from(b'='));
    block.extend(v.encode_wide());
    block.push(0);
  }
  if block.is_empty() {
    block.push(0);
  }
  block.push(0);
  block
}

fn owned(h: HANDLE) -> Option<OwnedHandle> {
  // SAFETY: `h` was just returned to us by the system as a new handle that nothing else owns.
  (!h.is_null() && h != INVALID_HANDLE_VALUE).then(|| unsafe { OwnedHandle::from_raw_handle(h as RawHandle) })
}

fn pipe() -> Result<(OwnedHandle, OwnedHandle), String> {
  let (mut read, mut write): (HANDLE, HANDLE) = (std::ptr::null_mut(), std::ptr::null_mut());
  // SAFETY: two writable handle slots; no security attributes (not inheritable); default size.
  if unsafe { CreatePipe(&mut read, &mut write, std::ptr::null(), 0) } == 0 {
    return Err(last_error("CreatePipe"));
  }
  match (owned(read), owned(write)) {
    (Some(r), Some(w)) => Ok((r, w)),
    _ => Err("CreatePipe returned no handles".into()),
  }
}

fn set_inheritable(h: HANDLE, on: bool) -> Result<(), String> {
  // SAFETY: `h` is a live handle we own; only its inherit flag changes.
  if unsafe { SetHandleInformation(h, HANDLE_FLAG_INHERIT, if on { HANDLE_FLAG_INHERIT } else { 0 }) } == 0 {
    return Err(last_error("SetHandleInformation"));
  }
  Ok(())
}

/// A process/thread attribute list with its values, kept alive together until `CreateProcessW`.
struct Attributes {
  buf: Vec<usize>,
  /// The list was initialized (and is deleted once, in `Drop`).
  initialized: bool,
  handles: Vec<HANDLE>,
  mitigations: u64,
  child_policy: u32,
}

impl Attributes {
  fn list(&self) -> LPPROC_THREAD_ATTRIBUTE_LIST {
    self.buf.as_ptr().cast_mut().cast()
  }

  /// The list with the handle list and, when `confine`, the mitigation and child-process policies.
  fn new(handles: Vec<HANDLE>, confine: bool) -> Result<Box<Self>, String> {
    let count = if confine { 3 } else { 1 };
    let mut size = 0usize;
    // SAFETY: the documented size query (a null list); fails with ERROR_INSUFFICIENT_BUFFER.
    unsafe { InitializeProcThreadAttributeList(std::ptr::null_mut(), count, 0, &mut size) };
    let words = size.div_ceil(std::mem::size_of::<usize>()).max(1);
    let mut this = Box::new(Self {
      buf: vec![0usize; words],
      initialized: false,
      handles,
      mitigations: mitigation::WORKER,
      child_policy: CHILD_PROCESS_RESTRICTED,
    });
    // SAFETY: `buf` is at least `size` bytes, pointer-aligned, and lives in the box with the values.
    if unsafe { InitializeProcThreadAttributeList(this.list(), count, 0, &mut size) } == 0 {
      return Err(last_error("InitializeProcThreadAttributeList"));
    }
    this.initialized = true;
    let list = this.list();
    let update = |attribute: u32, value: *const std::ffi::c_void, len: usize| {
      // SAFETY: an initialized list with room for `count` attributes; `value` points into the box,
      // which outlives the list (`Drop` deletes the list before the box is freed; the values are
      // never written after this).
      unsafe {
        UpdateProcThreadAttribute(list, 0, attribute as usize, value, len, std::ptr::null_mut(), std::ptr::null())
      }
    };
    let handle_list = (this.handles.as_ptr().cast(), this.handles.len() * std::mem::size_of::<HANDLE>());
    if update(PROC_THREAD_ATTRIBUTE_HANDLE_LIST, handle_list.0, handle_list.1) == 0 {
      return Err(last_error("UpdateProcThreadAttribute(HANDLE_LIST)"));
    }
    if confine {
      let mitigations = (&this.mitigations as *const u64).cast();
      let child = (&this.child_policy as *const u32).cast();
      if update(PROC_THREAD_ATTRIBUTE_MITIGATION_POLICY, mitigations, 8) == 0
        || update(PROC_THREAD_ATTRIBUTE_CHILD_PROCESS_POLICY, child, 4) == 0
      {
        return Err(last_error("UpdateProcThreadAttribute(MITIGATION_POLICY / CHILD_PROCESS_POLICY)"));
      }
    }
    Ok(this)
  }
}

impl Drop for Attributes {
  fn drop(&mut self) {
    if self.initialized {
      // SAFETY: the list was initialized in `new` and is deleted only here, once.
      unsafe { DeleteProcThreadAttributeList(self.list()) };
    }
  }
}

/// `SetInformationJobObject` of one information class; `info` must be that class's struct.
fn set_job_information<T>(job: &OwnedHandle, class: JOBOBJECTINFOCLASS, info: &T) -> bool {
  // SAFETY: `job` is a live job handle; `info` is a live `T` of the size passed, which the callers
  // pair with its class (JOBOBJECT_EXTENDED_LIMIT_INFORMATION, JOBOBJECT_BASIC_UI_RESTRICTIONS).
  unsafe {
    SetInformationJobObject(
      job.as_raw_handle() as HANDLE,
      class,
      (info as *const T).cast(),
      std::mem::size_of::<T>() as u32,
    ) != 0
  }
}

/// A started, confined worker: the process in its job, the write end of its stdin, the read end of
/// its stdout, and what could not be applied (a warning each).
pub struct Spawned {
  pub worker: Worker,
  pub stdin: File,
  pub stdout: File,
  pub warnings: Vec<String>,
}

/// Starts `exe` confined (module docs). `env` is its whole environment; `stderr` is where its
/// standard error goes (a handle of ours, duplicated for it), or the NUL device.
pub fn spawn(
  exe: &Path,
  env: &[(OsString, OsString)],
  stderr: Option<OwnedHandle>,
  memory: u64,
) -> Result<Spawned, String> {
  let (in_read, in_write) = pipe()?;
  let (out_read, out_write) = pipe()?;
  let err = match stderr {
    Some(h) => h,
    None => OwnedHandle::from(
      std::fs::OpenOptions::new().write(true).open("NUL").map_err(|e| format!("cannot open NUL: {e}"))?,
    ),
  };
  // SAFETY: no security attributes, no name: a new unnamed job.
  let job = owned(unsafe { CreateJobObjectW(std::ptr::null(), std::ptr::null()) })
    .ok_or_else(|| last_error("CreateJobObjectW"))?;
  if !set_job_information(&job, JobObjectExtendedLimitInformation, &job_limits(memory)) {
    return Err(last_error("SetInformationJobObject(limits)"));
  }
  let mut warnings = Vec::new();
  let ui = JOBOBJECT_BASIC_UI_RESTRICTIONS { UIRestrictionsClass: UI_LIMITS };
  if !set_job_information(&job, JobObjectBasicUIRestrictions, &ui) {
    warnings.push(last_error("SetInformationJobObject(UI restrictions)"));
  }

  let handles =
    vec![in_read.as_raw_handle() as HANDLE, out_write.as_raw_handle() as HANDLE, err.as_raw_handle() as HANDLE];
  let app = wide(exe.as_os_str());
  let mut cmd = command_line(exe);
  // Its own folder as the current directory: nothing is looked for in the host's.
  let cwd = wide(exe.parent().map_or(OsStr::new("."), |d| d.as_os_str()));
  let block = environment_block(env);
  let mut create = |attributes: &mut Attributes| -> Result<PROCESS_INFORMATION, (u32, String)> {
    // SAFETY: zero is a valid STARTUPINFOEXW before its fields are set.
    let mut si: STARTUPINFOEXW = unsafe { std::mem::zeroed() };
    si.StartupInfo.cb = std::mem::size_of::<STARTUPINFOEXW>() as u32;
    si.StartupInfo.dwFlags = STARTF_USESTDHANDLES;
    si.StartupInfo.hStdInput = handles[0];
    si.StartupInfo.hStdOutput = handles[1];
    si.StartupInfo.hStdError = handles[2];
    si.lpAttributeList = attributes.list();
    // SAFETY: zero is a valid PROCESS_INFORMATION to be filled in.
    let mut pi: PROCESS_INFORMATION = unsafe { std::mem::zeroed() };
    // The child's three ends are inheritable only for this call: the handle list lets only them
    // through to the worker, but a process another thread starts meanwhile without a list could
    // take them, so the window is kept short.
    for &h in &handles {
      set_inheritable(h, true).map_err(|e| (0, e))?;
    }
    // SAFETY: NUL-terminated wide strings that outlive the call (the command line is writable, as
    // CreateProcessW requires); a Unicode environment block ending in two NULs; the attribute list
    // and the handles it names are live; inheritance is limited to that list.
    let ok = unsafe {
      CreateProcessW(
        app.as_ptr(),
        cmd.as_mut_ptr(),
        std::ptr::null(),
        std::ptr::null(),
        1,
        // No console at all (a console would start conhost.exe inside the one-process job).
        CREATE_SUSPENDED | EXTENDED_STARTUPINFO_PRESENT | DETACHED_PROCESS | CREATE_UNICODE_ENVIRONMENT,
        block.as_ptr().cast(),
        cwd.as_ptr(),
        &si.StartupInfo,
        &mut pi,
      )
    };
    // SAFETY: reads the calling thread's last-error value, before the calls below change it.
    let code = if ok == 0 { unsafe { GetLastError() } } else { 0 };
    for &h in &handles {
      let _ = set_inheritable(h, false);
    }
    if ok == 0 {
      Err((code, format!("CreateProcessW failed: {}", std::io::Error::from_raw_os_error(code as i32))))
    } else {
      Ok(pi)
    }
  };
  // A Windows too old for a policy refuses the attribute or the process: then the job, the handle
  // list and Low integrity still hold, and the warning says what is missing.
  // Only a refused attribute (ERROR_INVALID_PARAMETER / ERROR_NOT_SUPPORTED) falls back; any other
  // failure is the start's own.
  let attempt = |confine: bool| Attributes::new(handles.clone(), confine).map_err(|e| (0, e));
  let pi = match attempt(true).and_then(|mut a| create(&mut a)) {
    Ok(pi) => pi,
    Err((code, first)) if code == 0 || code == ERROR_INVALID_PARAMETER || code == ERROR_NOT_SUPPORTED => {
      let pi = attempt(false).and_then(|mut a| create(&mut a)).map_err(|(_, e)| e)?;
      warnings.push(format!("the worker runs without its creation mitigation policies ({first})"));
      pi
    }
    Err((_, error)) => return Err(error),
  };

  drop((in_read, out_write, err));
  let process = owned(pi.hProcess).ok_or("CreateProcessW returned no process handle")?;
  let thread = owned(pi.hThread).ok_or("CreateProcessW returned no thread handle")?;
  let mut worker = Worker { process, job, pid: pi.dwProcessId };
  // SAFETY: both handles are live; the process is suspended and has run nothing yet.
  if unsafe { AssignProcessToJobObject(worker.job.as_raw_handle() as HANDLE, worker.process.as_raw_handle() as HANDLE) }
    == 0
  {
    let error = last_error("AssignProcessToJobObject");
    // SAFETY: the suspended child is ours to end.
    unsafe { TerminateProcess(worker.process.as_raw_handle() as HANDLE, KILLED) };
    return Err(error);
  }
  // SAFETY: the suspended main thread of the process just created.
  if unsafe { ResumeThread(thread.as_raw_handle() as HANDLE) } == u32::MAX {
    let error = last_error("ResumeThread");
    worker.kill();
    return Err(error);
  }
  Ok(Spawned { worker, stdin: File::from(in_write), stdout: File::from(out_read), warnings })
}

// ---- the worker's side -------------------------------------------------------------------

/// No error box, no "program stopped working" dialog: a crash ends the process (the host sees it).
pub fn quiet_errors() {
  // SAFETY: sets this process's error mode; no memory is involved.
  unsafe { SetErrorMode(SEM_FAILCRITICALERRORS | SEM_NOGPFAULTERRORBOX) };
}

/// Running under Wine (which keeps no integrity levels and applies no mitigation policy).
pub fn under_wine() -> bool {
  let ntdll = wide(OsStr::new("ntdll.dll"));
  // SAFETY: a NUL-terminated name; ntdll is mapped in every process; the symbol name is NUL-terminated.
  unsafe {
    let module = GetModuleHandleW(ntdll.as_ptr());
    !module.is_null() && GetProcAddress(module, c"wine_get_version".as_ptr().cast()).is_some()
  }
}

/// Lowers this process to Low integrity and forbids dynamic code (module docs). `Ok` carries
/// warnings (Wine); `Err` means the worker must run no script.
pub fn confine() -> Result<Vec<String>, String> {
  let mut warnings = Vec::new();
  let wine = under_wine();
  // SAFETY: zero is "no flags" for this policy struct before the one flag is set.
  let mut dynamic: PROCESS_MITIGATION_DYNAMIC_CODE_POLICY = unsafe { std::mem::zeroed() };
  dynamic.Anonymous.Flags = 1; // ProhibitDynamicCode
                               // SAFETY: the struct and its size match ProcessDynamicCodePolicy.
  if unsafe {
    SetProcessMitigationPolicy(
      ProcessDynamicCodePolicy,
      (&dynamic as *const PROCESS_MITIGATION_DYNAMIC_CODE_POLICY).cast(),
      std::mem::size_of::<PROCESS_MITIGATION_DYNAMIC_CODE_POLICY>(),
    )
  } == 0
  {
    // ERROR_ACCESS_DENIED: the creation attribute set it already (it cannot be set twice).
    // SAFETY: reads the calling thread's last-error value.
    if unsafe { GetLastError() } != ERROR_ACCESS_DENIED {
      warnings.push(last_error("SetProcessMitigationPolicy(ProhibitDynamicCode)"));
    }
  }
  let lowered = lower_to_low_integrity().and_then(|()| match integrity_rid() {
    Some(rid) if rid <= SECURITY_MANDATORY_LOW_RID as u32 => Ok(()),
    Some(rid) => Err(format!("its token still says integrity {rid:#x} after it was lowered to Low")),
    None => Err(last_error("GetTokenInformation(TokenIntegrityLevel)")),
  });
  match lowered {
    Ok(()) => Ok(warnings),
    Err(why) if wine => {
      warnings.push(format!("Wine keeps no integrity levels: the worker is not at Low integrity ({why})"));
      Ok(warnings)
    }
    Err(why) => Err(format!("could not lower itself to Low integrity: {why}")),
  }
}

fn process_token(access: u32) -> Result<OwnedHandle, String> {
  let mut token: HANDLE = std::ptr::null_mut();
  // SAFETY: the current-process pseudo-handle; `token` is a writable slot.
  if unsafe { OpenProcessToken(GetCurrentProcess(), access, &mut token) } == 0 {
    return Err(last_error("OpenProcessToken"));
  }
  owned(token).ok_or_else(|| "OpenProcessToken returned no token".into())
}

fn lower_to_low_integrity() -> Result<(), String> {
  let token = process_token(TOKEN_ADJUST_DEFAULT | TOKEN_QUERY)?;
  let mut sid = [0u8; SECURITY_MAX_SID_SIZE as usize];
  let mut len = SECURITY_MAX_SID_SIZE;
  // SAFETY: `sid` is writable for `len` bytes (the largest SID there is); no domain SID is needed.
  if unsafe { CreateWellKnownSid(WinLowLabelSid, std::ptr::null_mut(), sid.as_mut_ptr().cast(), &mut len) } == 0 {
    return Err(last_error("CreateWellKnownSid(WinLowLabelSid)"));
  }
  let label = TOKEN_MANDATORY_LABEL {
    Label: SID_AND_ATTRIBUTES { Sid: sid.as_mut_ptr().cast(), Attributes: SE_GROUP_INTEGRITY as u32 },
  };
  // SAFETY: `token` is live with TOKEN_ADJUST_DEFAULT; `label` points at `sid`, which outlives the
  // call; the length counts the struct and the SID, as the documentation asks.
  if unsafe {
    SetTokenInformation(
      token.as_raw_handle() as HANDLE,
      TokenIntegrityLevel,
      (&label as *const TOKEN_MANDATORY_LABEL).cast(),
      std::mem::size_of::<TOKEN_MANDATORY_LABEL>() as u32 + len,
    )
  } == 0
  {
    return Err(last_error("SetTokenInformation(TokenIntegrityLevel)"));
  }
  Ok(())
}

/// The integrity RID of this process's token (0x1000 Low, 0x2000 Medium, 0x3000 High).
pub fn integrity_rid() -> Option<u32> {
  let token = process_token(TOKEN_QUERY).ok()?;
  let mut buf = [0usize; 16];
  let mut len = 0u32;
  // SAFETY: `buf` is writable and pointer-aligned for the size passed; `len` is a writable u32.
  if unsafe {
    GetTokenInformation(
      token.as_raw_handle() as HANDLE,
      TokenIntegrityLevel,
      buf.as_mut_ptr().cast(),
      std::mem::size_of_val(&buf) as u32,
      &mut len,
    )
  } == 0
  {
    return None;
  }
  // SAFETY: the call filled `buf` with a TOKEN_MANDATORY_LABEL whose SID points inside `buf`.
  unsafe {
    let label = &*(buf.as_ptr() as *const TOKEN_MANDATORY_LABEL);
    let count = GetSidSubAuthorityCount(label.Label.Sid);
    if count.is_null() || *count == 0 {
      return None;
    }
    let rid = GetSidSubAuthority(label.Label.Sid, u32::from(*count - 1));
    (!rid.is_null()).then(|| *rid)
  }
}

#[cfg(test)]
mod tests {
  #![allow(clippy::expect_used, clippy::unwrap_used)]
  use super::*;

  #[test]
  fn the_job_limits_are_the_settings() {
    let info = job_limits(3 << 30);
    assert_eq!(info.BasicLimitInformation.LimitFlags, super::super::winjob::LIMIT_FLAGS);
    assert_eq!(info.BasicLimitInformation.ActiveProcessLimit, 1);
    assert_eq!(info.ProcessMemoryLimit, 3 << 30);
  }

  #[test]
  fn the_environment_block_is_sorted_and_double_terminated() {
    let block = environment_block(&[("b".into(), "2".into()), ("A".into(), "1".into())]);
    let text = String::from_utf16(&block).unwrap();
    assert_eq!(text, "A=1\0b=2\0\0");
    assert_eq!(String::from_utf16(&environment_block(&[])).unwrap(), "\0\0");
  }
}
