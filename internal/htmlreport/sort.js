(function(){
function key(c){var v=c.getAttribute('data-v');return v!==null?parseFloat(v):c.textContent.trim().toLowerCase()}
function sortBy(t,i,asc){var hs=t.tHead.rows[0].cells;for(var j=0;j<hs.length;j++)hs[j].removeAttribute('aria-sort');
hs[i].setAttribute('aria-sort',asc?'ascending':'descending');var b=t.tBodies[0],rows=[].slice.call(b.rows);
rows.sort(function(x,y){var p=key(x.cells[i]),q=key(y.cells[i]);return (p<q?-1:p>q?1:0)*(asc?1:-1)});
rows.forEach(function(r){b.appendChild(r)})}
[].forEach.call(document.querySelectorAll('table.sortable'),function(t){[].forEach.call(t.tHead.rows[0].cells,function(th,i){
var btn=th.querySelector('button');if(btn)btn.addEventListener('click',function(){sortBy(t,i,th.getAttribute('aria-sort')!=='ascending')})})});
var m=/^#sort=([\w-]+)\.(\d+)\.(asc|desc)$/.exec(location.hash);if(m){var t=document.getElementById(m[1]);
if(t&&t.tHead&&+m[2]<t.tHead.rows[0].cells.length)sortBy(t,+m[2],m[3]==='asc')}
})();
